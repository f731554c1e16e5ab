//! The controller ↔ agent mTLS material: a tls directory loaded, validated, watched, and
//! served to rustls (TLS 1.3 only, ALPN `h2`, mutual authentication).
//!
//! ```text
//! tls dir (Secret volume: ..data ─▶ ..<ts>/ | DirStore: <store>/<name> ─▶ .<name>-rev-…/)
//!   tls.crt tls.key ca.crt [previous-ca.crt previous-ca-until]
//!        │ load_dir: one whole revision, validated for a Role at `now`
//!        ▼
//!     Material ──set──▶ SharedMaterial ◀── watch_dir: notify on dir + parent, and every `poll`
//!                           │   (an invalid revision keeps the last valid one, error in TlsStatus)
//!          ┌────────────────┴────────────────┐
//!   server_config (agent)            client_config (controller)
//!   identity = current tls.crt       identity = current tls.crt
//!   client must chain to roots_at(now), server must chain to roots_at(now),
//!   clientAuth, SAN = controller     serverAuth, SAN = agent (whatever IP was dialed)
//!          └─── verify_client_chain / verify_server_chain: the same checks, per request ───┘
//! ```
//!
//! Trust is evaluated when it is used, never cached past a revision or a deadline: a
//! previous CA stops being trusted the moment its `previous-ca-until` passes, even without
//! a reload. The per-request checks remember a chain found valid ([`CheckedChains`]) only
//! under the same revision and until the first deadline the check reads.

mod chain;
mod checked;
mod config;
mod error;
mod leaf;
mod material;
mod revision;
mod serving;
mod shared;
mod trust;
mod verify;
mod watch;

#[cfg(test)]
mod testing;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::crypto::CryptoProvider;
use rustls_pki_types::UnixTime;
use sha2::{Digest, Sha256};

pub use checked::CheckedChains;
pub use config::{client_config, server_config};
pub use error::TlsError;
pub use material::{Material, load_dir};
pub use serving::serving_config;
pub use shared::{SharedMaterial, TlsStatus};
pub use trust::TrustBundle;
pub use verify::{PeerError, verify_client_chain, verify_server_chain};
pub use watch::watch_dir;

/// File names inside a tls directory.
pub mod files {
    pub use crate::lifecycle::keys::{
        CA_CRT, PREVIOUS_CA_CRT, PREVIOUS_CA_UNTIL, TLS_CRT, TLS_KEY,
    };
}

/// The one crypto provider of the controller ↔ agent link, passed explicitly so nothing
/// depends on a process-wide default.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// SHA-256 of `der`, lowercase hex: how a certificate is named in status and logs.
fn fingerprint(der: &[u8]) -> String {
    hex::encode(Sha256::digest(der))
}

fn unix_time(at: SystemTime) -> UnixTime {
    UnixTime::since_unix_epoch(at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
}

fn system_time(at: UnixTime) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(at.as_secs())
}
