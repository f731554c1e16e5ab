//! One certificate chain checked against trust anchors: the path
//! validation both the loading of tls material and the per-call peer checks
//! run.

use std::time::SystemTime;

use rustls_pki_types::{CertificateDer, TrustAnchor};
use webpki::KeyUsage;

use super::{provider, unix_time};
use crate::issue::Role;

/// webpki path validation of `chain` (end entity first) to one of `anchors` at `now`, for
/// the extended key usage of `role`.
pub(super) fn chains_to(
    chain: &[CertificateDer<'_>],
    anchors: &[TrustAnchor<'_>],
    role: Role,
    now: SystemTime,
) -> Result<(), webpki::Error> {
    let (end_entity, intermediates) = chain.split_first().ok_or(webpki::Error::BadDer)?;
    let usage = match role {
        Role::Agent => KeyUsage::server_auth(),
        Role::Controller => KeyUsage::client_auth(),
    };
    let cert = webpki::EndEntityCert::try_from(end_entity)?;
    cert.verify_for_usage(
        provider().signature_verification_algorithms.all,
        anchors,
        intermediates,
        unix_time(now),
        usage,
        None,
        None,
    )
    .map(|_| ())
}
