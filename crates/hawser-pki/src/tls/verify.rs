//! Checking the peer's certificate chain against the local material at a given time.
//!
//! The handshake verifiers and the per-request re-checks on open connections share these
//! functions, so a connection accepted yesterday is held to today's trust (a previous CA
//! past its deadline, an expired peer) with the same rules and the same messages.

use std::path::PathBuf;
use std::time::SystemTime;

use rustls_pki_types::CertificateDer;

use super::chain::chains_to;
use super::leaf::Leaf;
use super::material::Material;
use crate::issue::Role;
use crate::lifecycle::rfc3339;

/// Why a peer's certificate is refused.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The peer sent no certificate.
    #[error("the {peer} presented no certificate; it must present its identity (tls.crt)")]
    NoCertificate {
        /// The role expected at the other end.
        peer: &'static str,
    },
    /// This side has nothing valid to verify (or authenticate) with.
    #[error(
        "tls directory {dir} has no valid material, so no peer can be verified; the tls status says why it was refused"
    )]
    NoLocalMaterial {
        /// The local tls directory.
        dir: PathBuf,
    },
    /// The certificate does not parse.
    #[error("the {peer}'s certificate cannot be read: {reason}")]
    Malformed {
        /// The role expected at the other end.
        peer: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The certificate's validity window has ended.
    #[error(
        "the {peer}'s certificate {subject} expired at {not_after}; renew it (`hawser certs renew`) and let the {peer} reload"
    )]
    Expired {
        /// The role expected at the other end.
        peer: &'static str,
        /// Its subject.
        subject: String,
        /// Its notAfter, RFC 3339.
        not_after: String,
    },
    /// The certificate's validity window has not started.
    #[error(
        "the {peer}'s certificate {subject} is not valid before {not_before}; check both hosts' clocks"
    )]
    NotYetValid {
        /// The role expected at the other end.
        peer: &'static str,
        /// Its subject.
        subject: String,
        /// Its notBefore, RFC 3339.
        not_before: String,
    },
    /// The certificate was issued for the other role.
    #[error("certificate {subject} lacks the {usage} extended key usage: {why}")]
    WrongRole {
        /// Its subject.
        subject: String,
        /// The extended key usage it lacks.
        usage: &'static str,
        /// Which role it cannot act as.
        why: &'static str,
    },
    /// No CA trusted now signed the certificate.
    #[error(
        "the {peer}'s certificate {subject} (issuer {issuer}) is not signed by a ca trusted now ({reason}); the {peer} must use an identity issued by this ca.crt"
    )]
    UnknownCa {
        /// The role expected at the other end.
        peer: &'static str,
        /// Its subject.
        subject: String,
        /// Its issuer.
        issuer: String,
        /// What the path validation said.
        reason: String,
    },
    /// The certificate is signed by the previous CA, whose trust has ended.
    #[error(
        "the {peer}'s certificate {subject} is signed by the previous ca, trusted only until {until}; the {peer} must load its renewed identity"
    )]
    PreviousCaExpired {
        /// The role expected at the other end.
        peer: &'static str,
        /// Its subject.
        subject: String,
        /// The previous CA's deadline, RFC 3339.
        until: String,
    },
    /// The certificate names another peer.
    #[error("the {peer}'s certificate names {found:?}, expected {expected:?}")]
    WrongName {
        /// The role expected at the other end.
        peer: &'static str,
        /// The DNS name required.
        expected: String,
        /// The DNS names it carries.
        found: Vec<String>,
    },
}

impl PeerError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::NoCertificate { .. } => "no_certificate",
            Self::NoLocalMaterial { .. } => "no_local_material",
            Self::Malformed { .. } => "malformed",
            Self::Expired { .. } => "expired",
            Self::NotYetValid { .. } => "not_yet_valid",
            Self::WrongRole { .. } => "wrong_role",
            Self::UnknownCa { .. } => "unknown_ca",
            Self::PreviousCaExpired { .. } => "previous_ca_expired",
            Self::WrongName { .. } => "wrong_name",
        }
    }
}

/// Checks a client (controller) chain: valid at `now`, `clientAuth`, signed by a CA
/// `material` trusts at `now`, DNS SAN `expected_name`.
pub fn verify_client_chain(
    material: &Material,
    chain: &[CertificateDer<'_>],
    expected_name: &str,
    now: SystemTime,
) -> Result<(), PeerError> {
    verify_peer(material, chain, Role::Controller, expected_name, now)
}

/// Checks a server (agent) chain: valid at `now`, `serverAuth`, signed by a CA
/// `material` trusts at `now`, DNS SAN `expected_name`.
pub fn verify_server_chain(
    material: &Material,
    chain: &[CertificateDer<'_>],
    expected_name: &str,
    now: SystemTime,
) -> Result<(), PeerError> {
    verify_peer(material, chain, Role::Agent, expected_name, now)
}

pub(super) fn verify_peer(
    material: &Material,
    chain: &[CertificateDer<'_>],
    peer: Role,
    expected_name: &str,
    now: SystemTime,
) -> Result<(), PeerError> {
    let role = peer.as_str();
    let end_entity = chain
        .first()
        .ok_or(PeerError::NoCertificate { peer: role })?;
    let leaf =
        Leaf::parse(end_entity).map_err(|reason| PeerError::Malformed { peer: role, reason })?;
    if now > leaf.not_after {
        return Err(PeerError::Expired {
            peer: role,
            subject: leaf.subject,
            not_after: rfc3339(leaf.not_after),
        });
    }
    if now < leaf.not_before {
        return Err(PeerError::NotYetValid {
            peer: role,
            subject: leaf.subject,
            not_before: rfc3339(leaf.not_before),
        });
    }
    if !leaf.serves(peer) {
        return Err(PeerError::WrongRole {
            subject: leaf.subject,
            usage: peer.extended_key_usage(),
            why: match peer {
                Role::Controller => "an agent certificate cannot act as the controller",
                Role::Agent => "a controller certificate cannot act as the agent",
            },
        });
    }
    let trust = material.trust();
    if let Err(e) = chains_to(chain, &trust.roots_at(now).roots, peer, now) {
        let by_retired_ca = trust.previous().is_some_and(|(anchors, until)| {
            now >= until && chains_to(chain, &anchors, peer, now).is_ok()
        });
        return Err(match (by_retired_ca, trust.previous_ca_until()) {
            (true, Some(until)) => PeerError::PreviousCaExpired {
                peer: role,
                subject: leaf.subject,
                until: rfc3339(until),
            },
            _ => PeerError::UnknownCa {
                peer: role,
                subject: leaf.subject,
                issuer: leaf.issuer,
                reason: format!("{e:?}"),
            },
        });
    }
    if !leaf.is_named(expected_name) {
        return Err(PeerError::WrongName {
            peer: role,
            expected: expected_name.to_owned(),
            found: leaf.dns_names,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
