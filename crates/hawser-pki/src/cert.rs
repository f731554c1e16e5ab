//! Reading certificates back: PEM → validity window, subject, and "signed by this CA?".
//!
//! Renewal decisions and `check` both rely on these facts, read with x509-parser.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use x509_parser::certificate::X509Certificate;
use x509_parser::pem::Pem;

/// Why a certificate could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// The bytes are not a PEM certificate.
    #[error("not a PEM certificate: {0}")]
    Pem(String),
    /// The PEM block does not hold a valid X.509 certificate.
    #[error("not a valid X.509 certificate: {0}")]
    X509(String),
}

impl CertError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Pem(_) => "pem",
            Self::X509(_) => "x509",
        }
    }
}

/// The facts renewal needs about one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// Start of validity.
    pub not_before: SystemTime,
    /// End of validity.
    pub not_after: SystemTime,
    /// The subject, as text (`CN=...`).
    pub subject: String,
    /// The issuer, as text.
    pub issuer: String,
}

impl CertInfo {
    /// Total lifetime (`not_after - not_before`).
    pub fn lifetime(&self) -> Duration {
        self.not_after
            .duration_since(self.not_before)
            .unwrap_or_default()
    }
}

fn pem_block(pem: &[u8]) -> Result<Pem, CertError> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem).map_err(|e| CertError::Pem(e.to_string()))?;
    Ok(block)
}

fn with_cert<T>(pem: &[u8], f: impl FnOnce(&X509Certificate<'_>) -> T) -> Result<T, CertError> {
    let block = pem_block(pem)?;
    let cert = block
        .parse_x509()
        .map_err(|e| CertError::X509(e.to_string()))?;
    Ok(f(&cert))
}

/// A certificate timestamp (seconds since the epoch) as a `SystemTime`; before 1970 reads as 1970.
pub(crate) fn to_system_time(timestamp: i64) -> SystemTime {
    match u64::try_from(timestamp) {
        Ok(secs) => UNIX_EPOCH + Duration::from_secs(secs),
        Err(_) => UNIX_EPOCH,
    }
}

/// Parses the first certificate of a PEM file.
pub fn inspect(pem: &[u8]) -> Result<CertInfo, CertError> {
    with_cert(pem, |cert| CertInfo {
        not_before: to_system_time(cert.validity().not_before.timestamp()),
        not_after: to_system_time(cert.validity().not_after.timestamp()),
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
    })
}

/// Whether `leaf` names `ca` as its issuer and carries a valid signature by `ca`'s key.
pub fn is_signed_by(leaf: &[u8], ca: &[u8]) -> bool {
    let (Ok(leaf), Ok(ca)) = (pem_block(leaf), pem_block(ca)) else {
        return false;
    };
    let (Ok(leaf), Ok(ca)) = (leaf.parse_x509(), ca.parse_x509()) else {
        return false;
    };
    leaf.issuer() == ca.subject() && leaf.verify_signature(Some(ca.public_key())).is_ok()
}

/// The certificate's SubjectPublicKeyInfo, DER — to check that a stored key matches it.
pub fn public_key_der(pem: &[u8]) -> Result<Vec<u8>, CertError> {
    with_cert(pem, |cert| cert.public_key().raw.to_vec())
}
