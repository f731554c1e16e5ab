//! hawser's agent PKI: the CA and the controller/agent identities, kept in Secret-shaped storage.
//!
//! ```text
//!            Settings + now
//!                  │
//!   SecretStore ◀──┤ renew: bootstrap / renew / rotate CA (previous-ca overlap) / resume
//!   (DirStore,     │
//!    Kubernetes)   └ check: each certificate's expiry, due within 30 days or unreadable
//!       │
//!       ▼ identity Secret mounted as a tls directory
//!   tls: load + validate one revision ─▶ SharedMaterial (watched) ─▶ rustls configs (mTLS 1.3)
//! ```
//!
//! The issuer Secret holds `ca.crt`, `ca.key` and `generation`; each identity Secret holds
//! `tls.crt`, `tls.key`, `ca.crt`, its `generation` and, during a CA rotation,
//! `previous-ca.crt` + `previous-ca-until`.
//!
//! It must not depend on the controller, the agent, the renderer or the
//! model: both roles use it, and it knows certificates only.

pub mod cert;
pub mod issue;
pub mod lifecycle;
pub mod store;
pub mod tls;

pub use cert::{CertError, CertInfo};
pub use issue::{CertifiedKey, IssueError, Role};
pub use lifecycle::{
    CertStatus, RenewError, RenewOutcome, RenewRequest, Report, Settings, Written, check, renew,
    renew_with,
};
pub use store::{DirStore, KubeSecretStore, SecretData, SecretStore, StoreError};
