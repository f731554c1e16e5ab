//! The certificate lifecycle (seed 002, DESIGN §6): bootstrap, renewal, CA rotation, resume, check.
//!
//! ```text
//! read issuer ──none + no identities──▶ new CA, generation 1 ─┐
//!             ──none + identities────▶ error: restore issuer from backup
//!             ──corrupt──────────────▶ error: restore issuer from backup
//!             ──CA due / --rotate-ca─▶ new CA + key, generation + 1, previous-ca.crt ─┤ (issuer written FIRST)
//!                                                                                     ▼
//! each identity: missing / older generation / not signed by the CA / due ──▶ new key + cert,
//!                ca.crt = CA (+ previous-ca.crt and previous-ca-until = now + 1 h when rotating)
//! ```
//!
//! Because the issuer is written before the identities, a run killed at any point leaves
//! either the old state or an issuer ahead of its identities; the next run finishes that
//! generation instead of minting another CA. A forced rotation ([`RenewRequest::rotate_ca`])
//! starts only from a settled store (both identities on the issuer's generation), so
//! rerunning an interrupted `--rotate-ca` finishes that rotation rather than starting another.

use std::time::{Duration, SystemTime};

use rcgen::{KeyPair, PublicKeyData};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cert;
use crate::issue::{self, CertifiedKey, IssueError, Role};
use crate::store::{SecretData, SecretStore, StoreError};

/// Secret keys used by the lifecycle.
pub mod keys {
    /// CA certificate (issuer and identity trust).
    pub const CA_CRT: &str = "ca.crt";
    /// CA private key (issuer only).
    pub const CA_KEY: &str = "ca.key";
    /// Certificate generation (issuer: current; identity: the one it was issued under).
    pub const GENERATION: &str = "generation";
    /// Identity certificate.
    pub const TLS_CRT: &str = "tls.crt";
    /// Identity private key.
    pub const TLS_KEY: &str = "tls.key";
    /// The CA trusted during a rotation's overlap.
    pub const PREVIOUS_CA_CRT: &str = "previous-ca.crt";
    /// RFC 3339 deadline after which `previous-ca.crt` is ignored.
    pub const PREVIOUS_CA_UNTIL: &str = "previous-ca-until";
}

const DAY: Duration = Duration::from_secs(86_400);
/// Remaining lifetime at which certificates renew (and `check` complains).
pub const RENEW_BEFORE: Duration = Duration::from_secs(30 * 86_400);
/// How long both sides trust the previous CA after a rotation.
pub const TRUST_OVERLAP: Duration = Duration::from_secs(3600);

/// Secret names, peer names and lifetime for one installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Issuer Secret (CA key + generation).
    pub issuer: String,
    /// Agent identity Secret.
    pub agent: String,
    /// Controller identity Secret.
    pub controller: String,
    /// DNS SAN of the agent certificate.
    pub agent_name: String,
    /// DNS SAN of the controller certificate.
    pub controller_name: String,
    /// Lifetime of newly issued certificates, 1–3650 days.
    pub validity_days: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            issuer: "hawser-agent-issuer".into(),
            agent: "hawser-agent-identity".into(),
            controller: "hawser-controller-identity".into(),
            agent_name: "hawser-agent".into(),
            controller_name: "hawser-controller".into(),
            validity_days: 365,
        }
    }
}

/// A renewal run that could not complete.
#[derive(Debug, thiserror::Error)]
pub enum RenewError {
    /// Reading or writing a Secret failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Issuing a certificate failed.
    #[error(transparent)]
    Issue(#[from] IssueError),
    /// The issuer is gone while identities remain.
    #[error(
        "issuer secret {issuer} is missing but identity secrets exist; restore the issuer secret from backup (refusing to replace identities with an unrelated ca)"
    )]
    IssuerMissing {
        /// The issuer Secret name.
        issuer: String,
    },
    /// The issuer cannot be used.
    #[error(
        "issuer secret {issuer} is corrupt ({reason}); restore the issuer secret from backup (refusing to replace identities with an unrelated ca)"
    )]
    IssuerCorrupt {
        /// The issuer Secret name.
        issuer: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An identity is newer than the issuer: the issuer is stale or not theirs.
    #[error(
        "identity secret {identity} is generation {identity_generation} but issuer secret {issuer} is generation {issuer_generation}; restore the latest issuer backup (refusing to replace identities with an unrelated ca)"
    )]
    IssuerBehind {
        /// The identity Secret name.
        identity: String,
        /// Its generation.
        identity_generation: u64,
        /// The issuer Secret name.
        issuer: String,
        /// The issuer's generation.
        issuer_generation: u64,
    },
}

impl RenewError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Store(e) => e.metric_label(),
            Self::Issue(e) => e.metric_label(),
            Self::IssuerMissing { .. } => "issuer_missing",
            Self::IssuerCorrupt { .. } => "issuer_corrupt",
            Self::IssuerBehind { .. } => "issuer_behind",
        }
    }
}

/// What a renewal run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenewOutcome {
    /// The issuer's generation after the run.
    pub generation: u64,
    /// Secrets written, in order (empty when nothing was due).
    pub written: Vec<String>,
}

/// What a renewal run is asked for beyond bringing everything current.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenewRequest {
    /// Rotate the CA now even if it is not due (a suspected compromise, or a rehearsal).
    /// Ignored while a rotation is unfinished: that one is completed instead.
    pub rotate_ca: bool,
}

/// One Secret written by a renewal run, reported as soon as it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The Secret name.
    pub secret: String,
    /// The generation it now holds (the issuer's, for an identity).
    pub generation: u64,
}

/// The issuer as stored.
struct IssuerState {
    ca: CertifiedKey,
    generation: u64,
    previous_ca: Option<Vec<u8>>,
}

/// Whether a certificate with `info` is inside its renewal window at `now`: 30 days before
/// expiry, or one third of its lifetime when that lifetime is under 90 days.
///
/// The lifetime counts from issuance, not from the backdated `notBefore`
/// ([`issue::BACKDATE`]): counted from `notBefore`, a one-day certificate would be due the
/// moment it is issued, and every run would issue it again.
pub fn is_due(info: &cert::CertInfo, now: SystemTime) -> bool {
    let lifetime = info.lifetime().saturating_sub(issue::BACKDATE);
    let threshold = if lifetime < 90 * DAY {
        lifetime / 3
    } else {
        RENEW_BEFORE
    };
    match info.not_after.duration_since(now) {
        Ok(remaining) => remaining <= threshold,
        Err(_) => true,
    }
}

fn parse_generation(bytes: Option<&[u8]>) -> Option<u64> {
    std::str::from_utf8(bytes?).ok()?.trim().parse().ok()
}

fn load_issuer(name: &str, data: &SecretData) -> Result<IssuerState, RenewError> {
    let corrupt = |reason: &str| RenewError::IssuerCorrupt {
        issuer: name.to_owned(),
        reason: reason.to_owned(),
    };
    let text = |key| {
        data.get(key)
            .and_then(|b| std::str::from_utf8(b).ok())
            .map(str::to_owned)
            .ok_or_else(|| corrupt(&format!("{key} missing or not text")))
    };
    let (cert_pem, key_pem) = (text(keys::CA_CRT)?, text(keys::CA_KEY)?);
    let generation = parse_generation(data.get(keys::GENERATION))
        .ok_or_else(|| corrupt("generation missing or not a number"))?;
    let spki =
        cert::public_key_der(cert_pem.as_bytes()).map_err(|e| corrupt(&format!("ca.crt: {e}")))?;
    let key = KeyPair::from_pem(&key_pem).map_err(|e| corrupt(&format!("ca.key: {e}")))?;
    if key.subject_public_key_info() != spki {
        return Err(corrupt("ca.key does not match ca.crt"));
    }
    Ok(IssuerState {
        ca: CertifiedKey { cert_pem, key_pem },
        generation,
        previous_ca: data.get(keys::PREVIOUS_CA_CRT).map(<[u8]>::to_vec),
    })
}

fn issuer_data(issuer: &IssuerState) -> SecretData {
    let mut data = SecretData::default();
    data.insert(keys::CA_CRT, issuer.ca.cert_pem.as_bytes());
    data.insert(keys::CA_KEY, issuer.ca.key_pem.as_bytes());
    data.insert(keys::GENERATION, issuer.generation.to_string());
    if let Some(previous) = &issuer.previous_ca {
        data.insert(keys::PREVIOUS_CA_CRT, previous.clone());
    }
    data
}

/// Brings the issuer and both identities to a valid, current state. Idempotent: when
/// nothing is due, nothing is written. `now` is injectable so tests can travel in time.
pub fn renew(
    store: &dyn SecretStore,
    settings: &Settings,
    now: SystemTime,
) -> Result<RenewOutcome, RenewError> {
    renew_with(store, settings, now, RenewRequest::default(), &mut |_| {})
}

/// [`renew`], as `request` asks, calling `on_write` after each Secret is stored (so a
/// caller can report progress that survives the run being killed).
pub fn renew_with(
    store: &dyn SecretStore,
    settings: &Settings,
    now: SystemTime,
    request: RenewRequest,
    on_write: &mut dyn FnMut(&Written),
) -> Result<RenewOutcome, RenewError> {
    if !issue::VALIDITY_DAYS.contains(&settings.validity_days) {
        return Err(IssueError::Validity(settings.validity_days).into());
    }
    let mut written = Vec::new();
    let agent = store.read(&settings.agent)?;
    let controller = store.read(&settings.controller)?;
    let identity_generations = [&agent, &controller].map(|data| {
        data.as_ref()
            .and_then(|d| parse_generation(d.get(keys::GENERATION)))
    });

    let (issuer, issuer_changed) = match store.read(&settings.issuer)? {
        None if agent.is_some() || controller.is_some() => {
            return Err(RenewError::IssuerMissing {
                issuer: settings.issuer.clone(),
            });
        }
        None => {
            let fresh = IssuerState {
                ca: issue::new_ca(now, settings.validity_days, 1)?,
                generation: 1,
                previous_ca: None,
            };
            (fresh, true)
        }
        Some(data) => {
            let current = load_issuer(&settings.issuer, &data)?;
            let info = cert::inspect(current.ca.cert_pem.as_bytes()).map_err(|e| {
                RenewError::IssuerCorrupt {
                    issuer: settings.issuer.clone(),
                    reason: format!("ca.crt: {e}"),
                }
            })?;
            // Both identities on the issuer's generation: no rotation is half done.
            let settled = identity_generations
                .iter()
                .all(|g| *g == Some(current.generation));
            if is_due(&info, now) || (request.rotate_ca && settled) {
                let generation = current.generation + 1;
                let rotated = IssuerState {
                    ca: issue::new_ca(now, settings.validity_days, generation)?,
                    generation,
                    previous_ca: Some(current.ca.cert_pem.into_bytes()),
                };
                (rotated, true)
            } else {
                (current, false)
            }
        }
    };
    // Refuse before writing anything when an identity is ahead of the issuer.
    for (secret, generation) in [&settings.agent, &settings.controller]
        .into_iter()
        .zip(identity_generations)
    {
        ensure_not_behind(&issuer, secret, generation, settings)?;
    }
    let mut stored = |secret: &String, data: &SecretData| -> Result<(), RenewError> {
        store.write(secret, data)?;
        written.push(secret.clone());
        on_write(&Written {
            secret: secret.clone(),
            generation: issuer.generation,
        });
        Ok(())
    };
    if issuer_changed {
        // The issuer goes first: a run killed after this point resumes this generation.
        stored(&settings.issuer, &issuer_data(&issuer))?;
    }

    for (secret, existing, role, name) in [
        (&settings.agent, agent, Role::Agent, &settings.agent_name),
        (
            &settings.controller,
            controller,
            Role::Controller,
            &settings.controller_name,
        ),
    ] {
        let Some(data) = identity_update(&issuer, secret, existing, role, name, settings, now)?
        else {
            continue;
        };
        stored(secret, &data)?;
    }
    Ok(RenewOutcome {
        generation: issuer.generation,
        written,
    })
}

/// An identity issued under a later generation than the issuer means the issuer is stale.
fn ensure_not_behind(
    issuer: &IssuerState,
    secret: &str,
    identity_generation: Option<u64>,
    settings: &Settings,
) -> Result<(), RenewError> {
    match identity_generation {
        Some(generation) if generation > issuer.generation => Err(RenewError::IssuerBehind {
            identity: secret.to_owned(),
            identity_generation: generation,
            issuer: settings.issuer.clone(),
            issuer_generation: issuer.generation,
        }),
        _ => Ok(()),
    }
}

/// The new contents of one identity Secret, or `None` when it is current.
fn identity_update(
    issuer: &IssuerState,
    secret: &str,
    existing: Option<SecretData>,
    role: Role,
    name: &str,
    settings: &Settings,
    now: SystemTime,
) -> Result<Option<SecretData>, RenewError> {
    let ca = issuer.ca.cert_pem.as_bytes();
    let stored_generation = existing
        .as_ref()
        .and_then(|d| parse_generation(d.get(keys::GENERATION)));
    ensure_not_behind(issuer, secret, stored_generation, settings)?;
    let current = existing.as_ref().is_some_and(|d| {
        let (Some(crt), Some(_key)) = (d.get(keys::TLS_CRT), d.get(keys::TLS_KEY)) else {
            return false;
        };
        stored_generation == Some(issuer.generation)
            && d.get(keys::CA_CRT) == Some(ca)
            && cert::is_signed_by(crt, ca)
            && cert::inspect(crt).is_ok_and(|info| !is_due(&info, now))
    });
    if current {
        return Ok(None);
    }

    let identity = issue::new_identity(&issuer.ca, role, name, now, settings.validity_days)?;
    let mut data = SecretData::default();
    data.insert(keys::TLS_CRT, identity.cert_pem);
    data.insert(keys::TLS_KEY, identity.key_pem);
    data.insert(keys::CA_CRT, ca);
    data.insert(keys::GENERATION, issuer.generation.to_string());
    let rotating = stored_generation.is_some_and(|g| g < issuer.generation);
    if let (true, Some(previous)) = (rotating, &issuer.previous_ca) {
        data.insert(keys::PREVIOUS_CA_CRT, previous.clone());
        data.insert(keys::PREVIOUS_CA_UNTIL, rfc3339(now + TRUST_OVERLAP));
    }
    Ok(Some(data))
}

/// `at` as RFC 3339 UTC, whole seconds (`2027-01-15T08:00:00Z`).
pub(crate) fn rfc3339(at: SystemTime) -> String {
    let at = OffsetDateTime::from(at);
    let at = at.replace_nanosecond(0).unwrap_or(at);
    // Formatting a UTC time with Rfc3339 only fails for years outside 0..=9999.
    at.format(&Rfc3339).unwrap_or_default()
}

/// One certificate as seen by [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertStatus {
    /// The Secret holding it.
    pub secret: String,
    /// The key within the Secret (`tls.crt`, `ca.crt`).
    pub key: String,
    /// Its expiry, when readable.
    pub not_after: Option<SystemTime>,
    /// Why it needs attention (expiring within 30 days, unreadable), if it does.
    pub problem: Option<String>,
}

/// The result of [`check`]: every certificate the peers use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// One entry per certificate, in Secret order.
    pub certificates: Vec<CertStatus>,
}

impl Report {
    /// Whether any certificate expires within 30 days or cannot be read.
    pub fn needs_attention(&self) -> bool {
        self.certificates.iter().any(|c| c.problem.is_some())
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in &self.certificates {
            write!(f, "{} {}: ", c.secret, c.key)?;
            match c.not_after {
                Some(at) => write!(f, "notAfter={}", rfc3339(at))?,
                None => write!(f, "notAfter=unknown")?,
            }
            match &c.problem {
                Some(problem) => writeln!(f, " ({problem})")?,
                None => writeln!(f, " (ok)")?,
            }
        }
        Ok(())
    }
}

/// Reads the public certificates of both identity Secrets (`tls.crt`, `ca.crt`) and
/// reports each expiry. Never reads the issuer, so it needs no access to the CA key.
pub fn check(
    store: &dyn SecretStore,
    settings: &Settings,
    now: SystemTime,
) -> Result<Report, RenewError> {
    let mut certificates = Vec::new();
    for secret in [&settings.agent, &settings.controller] {
        let data = store.read(secret)?;
        for key in [keys::TLS_CRT, keys::CA_CRT] {
            let status = |not_after, problem: String| CertStatus {
                secret: secret.clone(),
                key: key.to_owned(),
                not_after,
                problem: Some(problem),
            };
            let Some(pem) = data.as_ref().and_then(|d| d.get(key)) else {
                certificates.push(status(None, "missing".into()));
                continue;
            };
            match cert::inspect(pem) {
                Err(e) => certificates.push(status(None, format!("unreadable: {e}"))),
                Ok(info) => {
                    let expiring = info
                        .not_after
                        .duration_since(now)
                        .map_or(true, |left| left <= RENEW_BEFORE);
                    let mut entry = status(Some(info.not_after), "expires within 30 days".into());
                    if !expiring {
                        entry.problem = None;
                    }
                    certificates.push(entry);
                }
            }
        }
    }
    Ok(Report { certificates })
}

#[cfg(test)]
mod tests;
