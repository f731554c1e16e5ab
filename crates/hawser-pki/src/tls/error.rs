//! Why a tls directory cannot be used. Each message names the file at fault and the fix.

use std::io;
use std::path::PathBuf;

/// A tls directory that cannot be loaded; the last valid material (if any) stays in use.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The directory (or its `..data` link) cannot be read.
    #[error(
        "cannot read tls directory {dir}: {source}; mount the identity secret there (or run `hawser certs bootstrap`) and check its permissions"
    )]
    Unreadable {
        /// The tls directory.
        dir: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The directory was replaced again and again while it was being read.
    #[error(
        "tls directory {dir} changed during each of {attempts} reads; it is read again on the next change"
    )]
    Unstable {
        /// The tls directory.
        dir: PathBuf,
        /// How many reads were tried.
        attempts: usize,
    },
    /// A required file is absent.
    #[error(
        "{path} is missing; the identity secret must hold tls.crt, tls.key and ca.crt (run `hawser certs renew`)"
    )]
    Missing {
        /// The missing file.
        path: PathBuf,
    },
    /// A certificate file is not PEM, or holds no certificate that parses.
    #[error(
        "{path} is not a valid PEM certificate ({reason}); restore it from the identity secret (run `hawser certs renew`)"
    )]
    Certificate {
        /// The certificate file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `tls.key` is not a usable PEM private key.
    #[error(
        "{path} is not a valid PEM private key ({reason}); restore it from the identity secret (run `hawser certs renew`)"
    )]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `tls.key` belongs to another certificate.
    #[error(
        "{key} does not match {cert}; both must come from the same issue (run `hawser certs renew`)"
    )]
    KeyMismatch {
        /// The key file.
        key: PathBuf,
        /// The certificate file.
        cert: PathBuf,
    },
    /// The identity's validity window has ended.
    #[error("{path} expired at {not_after}; run `hawser certs renew`")]
    Expired {
        /// The certificate file.
        path: PathBuf,
        /// Its notAfter, RFC 3339.
        not_after: String,
    },
    /// The identity's validity window has not started.
    #[error("{path} is not valid before {not_before}; check this host's clock")]
    NotYetValid {
        /// The certificate file.
        path: PathBuf,
        /// Its notBefore, RFC 3339.
        not_before: String,
    },
    /// The identity was issued for the other role.
    #[error(
        "{path} lacks the {usage} extended key usage the {role} identity needs; mount the {role} identity secret here, not the {peer}'s"
    )]
    WrongRole {
        /// The certificate file.
        path: PathBuf,
        /// The role this directory serves.
        role: &'static str,
        /// The role whose certificate it holds instead.
        peer: &'static str,
        /// The extended key usage that is missing.
        usage: &'static str,
    },
    /// The identity does not chain to `ca.crt` (nor to a previous CA still trusted).
    #[error(
        "{cert} is not signed by {ca} (nor by an active previous-ca.crt): {reason}; the identity and its ca come from different issues (run `hawser certs renew`)"
    )]
    Untrusted {
        /// The certificate file.
        cert: PathBuf,
        /// The CA file.
        ca: PathBuf,
        /// What the path validation said.
        reason: String,
    },
    /// Only one of `previous-ca.crt` and `previous-ca-until` is present.
    #[error(
        "{present} exists without {absent}; previous-ca.crt and previous-ca-until must come together (run `hawser certs renew`)"
    )]
    PreviousIncomplete {
        /// The file that is present.
        present: PathBuf,
        /// The file that is absent.
        absent: PathBuf,
    },
    /// `previous-ca-until` is not a timestamp.
    #[error(
        "{path} is not an RFC 3339 time ({value:?}: {reason}); write e.g. 2030-01-31T12:00:00Z"
    )]
    PreviousUntilInvalid {
        /// The deadline file.
        path: PathBuf,
        /// Its content (it is public).
        value: String,
        /// Why it does not parse.
        reason: String,
    },
    /// `previous-ca-until` trusts the previous CA for too long.
    #[error(
        "{path} is {until}, more than 24 h from now; a previous ca is trusted for at most 24 h, so set an earlier deadline"
    )]
    PreviousUntilTooFar {
        /// The deadline file.
        path: PathBuf,
        /// The deadline, as written.
        until: String,
    },
}

impl TlsError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Unreadable { .. } => "unreadable",
            Self::Unstable { .. } => "unstable",
            Self::Missing { .. } => "missing",
            Self::Certificate { .. } => "certificate",
            Self::Key { .. } => "key",
            Self::KeyMismatch { .. } => "key_mismatch",
            Self::Expired { .. } => "expired",
            Self::NotYetValid { .. } => "not_yet_valid",
            Self::WrongRole { .. } => "wrong_role",
            Self::Untrusted { .. } => "untrusted",
            Self::PreviousIncomplete { .. } => "previous_incomplete",
            Self::PreviousUntilInvalid { .. } => "previous_until_invalid",
            Self::PreviousUntilTooFar { .. } => "previous_until_too_far",
        }
    }
}
