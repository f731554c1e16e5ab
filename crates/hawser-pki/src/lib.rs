//! hawser's agent PKI: the CA and the controller/agent identities, kept in Secret-shaped storage.
//!
//! ```text
//!            Settings + now
//!                  │
//!   SecretStore ◀──┤ renew: bootstrap / renew / rotate CA (previous-ca overlap) / resume
//!   (DirStore,     │
//!    Kubernetes)   └ check: each certificate's expiry, due within 30 days or unreadable
//! ```
//!
//! The issuer Secret holds `ca.crt`, `ca.key` and `generation`; each identity Secret holds
//! `tls.crt`, `tls.key`, `ca.crt`, its `generation` and, during a CA rotation,
//! `previous-ca.crt` + `previous-ca-until`.

pub mod cert;
pub mod issue;
pub mod lifecycle;
pub mod store;

pub use cert::{CertError, CertInfo};
pub use issue::{CertifiedKey, IssueError, Role};
pub use lifecycle::{CertStatus, RenewError, RenewOutcome, Report, Settings, check, renew};
pub use store::{DirStore, SecretData, SecretStore, StoreError};
