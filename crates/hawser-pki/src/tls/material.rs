//! [`Material`]: one whole, validated revision of a tls directory.
//!
//! Validation happens once, at load, for the role the directory serves, so a broken
//! Secret is reported with its file and fix instead of surfacing as a handshake failure.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::sign::CertifiedKey;
use rustls::{Error as RustlsError, InconsistentKeys};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::chain::chains_to;
use super::error::TlsError;
use super::leaf::Leaf;
use super::revision::{self, Revision};
use super::trust::{CaCert, PreviousCa, TrustBundle};
use super::{files, provider};
use crate::issue::Role;
use crate::lifecycle::rfc3339;

/// The longest a previous CA may stay trusted: a rotation's overlap is one hour, so a
/// deadline further out is a mistake (or an attempt to keep a retired CA alive).
const MAX_PREVIOUS_TRUST: Duration = Duration::from_secs(24 * 3600);

/// One revision of a tls directory: the identity presented to the peer and the CAs the
/// peer is checked against. `Debug` never shows key material.
pub struct Material {
    dir: PathBuf,
    role: Role,
    revision: String,
    identity: Arc<CertifiedKey>,
    subject: String,
    not_after: SystemTime,
    trust: TrustBundle,
}

/// Loads and validates the revision `dir` holds now, as `role`'s identity at `now`.
pub fn load_dir(dir: &Path, role: Role, now: SystemTime) -> Result<Material, TlsError> {
    let revision = revision::read(dir)?;
    Material::validate(dir, role, now, &revision)
}

impl Material {
    fn validate(
        dir: &Path,
        role: Role,
        now: SystemTime,
        revision: &Revision,
    ) -> Result<Material, TlsError> {
        let required = |name: &str| {
            revision.get(name).ok_or_else(|| TlsError::Missing {
                path: dir.join(name),
            })
        };
        let (crt, key, ca) = (
            required(files::TLS_CRT)?,
            required(files::TLS_KEY)?,
            required(files::CA_CRT)?,
        );
        let crt_path = dir.join(files::TLS_CRT);
        let chain = certificates(&crt_path, crt)?;
        let leaf = chain
            .first()
            .ok_or_else(|| "no certificate".to_owned())
            .and_then(|der| Leaf::parse(der))
            .map_err(|reason| TlsError::Certificate {
                path: crt_path.clone(),
                reason,
            })?;
        let current = ca_certs(&dir.join(files::CA_CRT), ca)?;
        let identity = certified_key(dir, chain, key)?;

        if now > leaf.not_after {
            return Err(TlsError::Expired {
                path: crt_path,
                not_after: rfc3339(leaf.not_after),
            });
        }
        if now < leaf.not_before {
            return Err(TlsError::NotYetValid {
                path: crt_path,
                not_before: rfc3339(leaf.not_before),
            });
        }
        if !leaf.serves(role) {
            return Err(TlsError::WrongRole {
                path: crt_path,
                role: role.as_str(),
                peer: role.peer().as_str(),
                usage: role.extended_key_usage(),
            });
        }

        let trust = TrustBundle::new(current, previous_ca(dir, revision, now)?);
        chains_to(&identity.cert, &trust.roots_at(now).roots, role, now).map_err(|e| {
            TlsError::Untrusted {
                cert: crt_path,
                ca: dir.join(files::CA_CRT),
                reason: format!("{e:?}"),
            }
        })?;
        Ok(Material {
            dir: dir.to_owned(),
            role,
            revision: revision.id(),
            identity: Arc::new(identity),
            subject: leaf.subject,
            not_after: leaf.not_after,
            trust,
        })
    }

    /// The tls directory this was read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The role whose identity this is.
    pub fn role(&self) -> Role {
        self.role
    }

    /// SHA-256 (hex) over the names and contents of the tls files present (`tls.crt`,
    /// `tls.key`, `ca.crt`, `previous-ca.crt`, `previous-ca-until`): identifies the revision.
    pub fn revision(&self) -> &str {
        &self.revision
    }

    /// The identity certificate chain and its key, for rustls.
    pub fn certified_key(&self) -> Arc<CertifiedKey> {
        Arc::clone(&self.identity)
    }

    /// The identity's subject (`CN=...`).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The identity's notAfter.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }

    /// The CAs this revision trusts.
    pub fn trust(&self) -> &TrustBundle {
        &self.trust
    }

    /// SHA-256 (hex) of each `ca.crt` certificate's DER.
    pub fn ca_fingerprints(&self) -> Vec<String> {
        self.trust.ca_fingerprints()
    }

    /// When trust in `previous-ca.crt` ends, during a rotation.
    pub fn previous_ca_until(&self) -> Option<SystemTime> {
        self.trust.previous_ca_until()
    }
}

impl fmt::Debug for Material {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Material")
            .field("dir", &self.dir)
            .field("role", &self.role)
            .field("revision", &self.revision)
            .field("subject", &self.subject)
            .field("not_after", &rfc3339(self.not_after))
            .field("trust", &self.trust)
            .finish_non_exhaustive()
    }
}

/// Every certificate of a PEM file, in order; at least one.
pub(super) fn certificates(
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let invalid = |reason: String| TlsError::Certificate {
        path: path.to_owned(),
        reason,
    };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(e.to_string()))?;
    if certs.is_empty() {
        return Err(invalid("no CERTIFICATE block".into()));
    }
    Ok(certs)
}

fn ca_certs(path: &Path, pem: &[u8]) -> Result<Vec<CaCert>, TlsError> {
    certificates(path, pem)?
        .iter()
        .map(CaCert::new)
        .collect::<Result<_, _>>()
        .map_err(|reason| TlsError::Certificate {
            path: path.to_owned(),
            reason,
        })
}

/// The chain with its key, once the key is known to belong to the leaf.
pub(super) fn certified_key(
    dir: &Path,
    chain: Vec<CertificateDer<'static>>,
    pem: &[u8],
) -> Result<CertifiedKey, TlsError> {
    let key_path = dir.join(files::TLS_KEY);
    let invalid = |reason: String| TlsError::Key {
        path: key_path.clone(),
        reason,
    };
    let der = PrivateKeyDer::from_pem_slice(pem).map_err(|e| invalid(e.to_string()))?;
    let key = provider()
        .key_provider
        .load_private_key(der)
        .map_err(|e| invalid(e.to_string()))?;
    let certified = CertifiedKey::new(chain, key);
    match certified.keys_match() {
        // ring reports every key's public half; "unknown" would mean it cannot compare.
        Ok(()) | Err(RustlsError::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(certified),
        Err(RustlsError::InconsistentKeys(_)) => Err(TlsError::KeyMismatch {
            key: key_path,
            cert: dir.join(files::TLS_CRT),
        }),
        Err(e) => Err(TlsError::Certificate {
            path: dir.join(files::TLS_CRT),
            reason: e.to_string(),
        }),
    }
}

/// The previous CA of a rotation. Past its deadline it is ignored (kept, when it parses,
/// only to explain why a peer it signed is refused).
fn previous_ca(
    dir: &Path,
    revision: &Revision,
    now: SystemTime,
) -> Result<Option<PreviousCa>, TlsError> {
    let (crt_path, until_path) = (
        dir.join(files::PREVIOUS_CA_CRT),
        dir.join(files::PREVIOUS_CA_UNTIL),
    );
    let (pem, until) = match (
        revision.get(files::PREVIOUS_CA_CRT),
        revision.get(files::PREVIOUS_CA_UNTIL),
    ) {
        (None, None) => return Ok(None),
        (Some(pem), Some(until)) => (pem, until),
        (Some(_), None) => {
            return Err(TlsError::PreviousIncomplete {
                present: crt_path,
                absent: until_path,
            });
        }
        (None, Some(_)) => {
            return Err(TlsError::PreviousIncomplete {
                present: until_path,
                absent: crt_path,
            });
        }
    };
    let until = parse_until(&until_path, until)?;
    if until > now + MAX_PREVIOUS_TRUST {
        return Err(TlsError::PreviousUntilTooFar {
            path: until_path,
            until: rfc3339(until),
        });
    }
    let certs = ca_certs(&crt_path, pem);
    if now >= until {
        return Ok(certs.ok().map(|certs| PreviousCa { certs, until }));
    }
    Ok(Some(PreviousCa {
        certs: certs?,
        until,
    }))
}

fn parse_until(path: &Path, bytes: &[u8]) -> Result<SystemTime, TlsError> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    OffsetDateTime::parse(text, &Rfc3339)
        .map(SystemTime::from)
        .map_err(|e| TlsError::PreviousUntilInvalid {
            path: path.to_owned(),
            value: text.chars().take(64).collect(),
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests;
