//! The CAs a tls directory trusts: `ca.crt`, plus during a rotation `previous-ca.crt`
//! until `previous-ca-until`.
//!
//! The deadline is applied when trust is used ([`TrustBundle::roots_at`]), not when the
//! directory is loaded, so a previous CA stops being trusted on time without a reload.

use std::fmt;
use std::time::SystemTime;

use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, TrustAnchor};

use super::fingerprint;
use crate::lifecycle::rfc3339;

/// One trusted CA certificate.
#[derive(Clone)]
pub(super) struct CaCert {
    anchor: TrustAnchor<'static>,
    fingerprint: String,
}

impl CaCert {
    /// Makes `der` a trust anchor; the error says why it cannot be one.
    pub(super) fn new(der: &CertificateDer<'_>) -> Result<CaCert, String> {
        let anchor = webpki::anchor_from_trusted_cert(der).map_err(|e| format!("{e:?}"))?;
        Ok(CaCert {
            anchor: anchor.to_owned(),
            fingerprint: fingerprint(der),
        })
    }
}

/// The previous CA of a rotation and the end of its trust.
#[derive(Clone)]
pub(super) struct PreviousCa {
    pub(super) certs: Vec<CaCert>,
    pub(super) until: SystemTime,
}

/// The trust half of a [`Material`](super::Material).
#[derive(Clone)]
pub struct TrustBundle {
    current: Vec<CaCert>,
    previous: Option<PreviousCa>,
}

impl TrustBundle {
    pub(super) fn new(current: Vec<CaCert>, previous: Option<PreviousCa>) -> TrustBundle {
        TrustBundle { current, previous }
    }

    /// The trust anchors active at `now`: every `ca.crt` certificate, and the previous CA
    /// while `now` is before its deadline.
    pub fn roots_at(&self, now: SystemTime) -> RootCertStore {
        let mut roots = RootCertStore::empty();
        roots
            .roots
            .extend(self.current.iter().map(|ca| ca.anchor.clone()));
        if let Some(previous) = self.previous.as_ref().filter(|p| now < p.until) {
            roots
                .roots
                .extend(previous.certs.iter().map(|ca| ca.anchor.clone()));
        }
        roots
    }

    /// The previous CA's anchors, active or not: to tell "signed by a CA whose trust
    /// ended" from "signed by a stranger".
    pub(super) fn previous(&self) -> Option<(Vec<TrustAnchor<'static>>, SystemTime)> {
        self.previous.as_ref().map(|p| {
            let anchors = p.certs.iter().map(|ca| ca.anchor.clone()).collect();
            (anchors, p.until)
        })
    }

    /// When trust in the previous CA ends, when there is one.
    pub fn previous_ca_until(&self) -> Option<SystemTime> {
        self.previous.as_ref().map(|p| p.until)
    }

    /// Whether the previous CA is trusted at `now`.
    pub fn previous_active(&self, now: SystemTime) -> bool {
        self.previous_ca_until().is_some_and(|until| now < until)
    }

    /// SHA-256 (hex) of each `ca.crt` certificate's DER.
    pub fn ca_fingerprints(&self) -> Vec<String> {
        self.current
            .iter()
            .map(|ca| ca.fingerprint.clone())
            .collect()
    }

    /// SHA-256 (hex) of each `previous-ca.crt` certificate's DER.
    pub fn previous_ca_fingerprints(&self) -> Vec<String> {
        self.previous
            .iter()
            .flat_map(|p| p.certs.iter().map(|ca| ca.fingerprint.clone()))
            .collect()
    }
}

impl fmt::Debug for TrustBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustBundle")
            .field("ca", &self.ca_fingerprints())
            .field("previous_ca", &self.previous_ca_fingerprints())
            .field("previous_ca_until", &self.previous_ca_until().map(rfc3339))
            .finish()
    }
}
