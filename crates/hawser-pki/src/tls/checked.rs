//! Peer chains found valid, remembered while checking them again must give
//! the same answer.
//!
//! An open connection's chain is checked again with every call on it (an
//! Apply, each state the agent streams, each push the controller makes), so
//! that trust that ended ends the connection's use. Each check is a full
//! path validation with its signature checks, about a tenth of a
//! millisecond, several times on the way of every change. Its answer
//! depends only on the local material (named by its revision), the chain,
//! the role and name expected, and the time; for a chain found valid it
//! stays the same while no certificate of the chain has expired and the
//! previous CA's trust has not ended (the only deadlines the check reads),
//! and the clock has not gone back before the check. That window is what is
//! remembered: outside it, or under another revision, the chain is checked
//! in full again. Refusals are never remembered.

use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use rustls_pki_types::CertificateDer;

use super::material::Material;
use super::verify::{PeerError, verify_peer};
use crate::cert::to_system_time;
use crate::issue::Role;

/// How many chains are remembered (a controller talks to each agent of its
/// fleet; an agent hears from one controller, two during a hand-over).
const REMEMBERED: usize = 64;

/// Peer checks that remember the chains they found valid (see the module
/// documentation for the window each is remembered for).
#[derive(Debug, Default)]
pub struct CheckedChains {
    valid: Mutex<Vec<Valid>>,
    #[cfg(test)]
    full_checks: std::sync::atomic::AtomicUsize,
}

/// A chain found valid, and the window in which it still is.
#[derive(Debug)]
struct Valid {
    revision: String,
    role: Role,
    name: String,
    chain: Vec<Vec<u8>>,
    /// When it was checked: a clock set back before it checks again.
    from: SystemTime,
    /// The first deadline after the check: the earliest notAfter of the
    /// chain, or the end of the previous CA's trust.
    until: SystemTime,
}

impl Valid {
    fn covers(
        &self,
        material: &Material,
        chain: &[CertificateDer<'_>],
        role: Role,
        name: &str,
        now: SystemTime,
    ) -> bool {
        self.from <= now
            && now < self.until
            && self.role == role
            && self.name == name
            && self.revision == material.revision()
            && self
                .chain
                .iter()
                .map(Vec::as_slice)
                .eq(chain.iter().map(|c| c.as_ref()))
    }
}

impl CheckedChains {
    /// [`super::verify_client_chain`], remembered.
    pub fn verify_client_chain(
        &self,
        material: &Material,
        chain: &[CertificateDer<'_>],
        expected_name: &str,
        now: SystemTime,
    ) -> Result<(), PeerError> {
        self.verify(material, chain, Role::Controller, expected_name, now)
    }

    /// [`super::verify_server_chain`], remembered.
    pub fn verify_server_chain(
        &self,
        material: &Material,
        chain: &[CertificateDer<'_>],
        expected_name: &str,
        now: SystemTime,
    ) -> Result<(), PeerError> {
        self.verify(material, chain, Role::Agent, expected_name, now)
    }

    fn verify(
        &self,
        material: &Material,
        chain: &[CertificateDer<'_>],
        role: Role,
        name: &str,
        now: SystemTime,
    ) -> Result<(), PeerError> {
        let mut valid = self.valid.lock().unwrap_or_else(PoisonError::into_inner);
        if valid
            .iter()
            .any(|v| v.covers(material, chain, role, name, now))
        {
            return Ok(());
        }
        #[cfg(test)]
        self.full_checks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        verify_peer(material, chain, role, name, now)?;
        valid.retain(|v| v.from <= now && now < v.until);
        if valid.len() >= REMEMBERED {
            valid.remove(0);
        }
        valid.push(Valid {
            revision: material.revision().to_owned(),
            role,
            name: name.to_owned(),
            chain: chain.iter().map(|c| c.as_ref().to_vec()).collect(),
            from: now,
            until: first_deadline(material, chain, now),
        });
        Ok(())
    }

    /// How many checks were made in full.
    #[cfg(test)]
    fn full_checks(&self) -> usize {
        self.full_checks.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The first time after `now` at which checking `chain` again may answer
/// otherwise: the earliest notAfter of its certificates, or the end of the
/// previous CA's trust when that is still ahead. A certificate that does
/// not parse here (it did for the check) gives `now`: nothing remembered.
fn first_deadline(
    material: &Material,
    chain: &[CertificateDer<'_>],
    now: SystemTime,
) -> SystemTime {
    let mut until = material
        .trust()
        .previous_ca_until()
        .filter(|until| *until > now);
    for cert in chain {
        let not_after = x509_parser::parse_x509_certificate(cert.as_ref())
            .map(|(_, cert)| to_system_time(cert.validity().not_after.timestamp()))
            .unwrap_or(now);
        until = Some(until.map_or(not_after, |u| u.min(not_after)));
    }
    until.unwrap_or(now)
}

#[cfg(test)]
mod tests;
