//! Issuing certificates: the self-signed CA and the two role identities it signs.
//!
//! ```text
//! (now, validity) ──▶ new_ca ──▶ CA (cert + key)
//! CA + Role + name ──▶ new_identity ──▶ agent: serverAuth, SAN=name | controller: clientAuth, SAN=name
//! ```

use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use time::OffsetDateTime;

use crate::cert;

/// Shortest and longest accepted `--validity-days`.
pub const VALIDITY_DAYS: std::ops::RangeInclusive<u32> = 1..=3650;

/// How long before its issuance a certificate becomes valid: `notBefore` = issuance − this.
///
/// A wall clock behind the issuing clock by up to this much (an NTP step, a VM resumed from
/// a snapshot, a node that drifted) still finds a fresh certificate valid, both on the side
/// that loads it and on the peer that checks it, so a step of a day on each side never
/// turns a peer away. Backdating grants nothing after issuance: `notAfter` is unchanged.
pub const BACKDATE: Duration = Duration::from_secs(2 * 86_400);

/// A failure to issue a certificate.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// The requested validity is outside [`VALIDITY_DAYS`].
    #[error("invalid validity of {0} days: must be between 1 and 3650")]
    Validity(u32),
    /// rcgen refused to build or sign the certificate.
    #[error("failed to issue certificate {what}: {source}")]
    Sign {
        /// Which certificate (e.g. `agent identity hawser-agent`).
        what: String,
        /// The underlying error.
        #[source]
        source: rcgen::Error,
    },
    /// The CA given for signing could not be loaded.
    #[error("failed to load the CA for signing: {0}")]
    Ca(String),
}

impl IssueError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Validity(_) => "validity",
            Self::Sign { .. } => "sign",
            Self::Ca(_) => "ca",
        }
    }
}

/// Which side of the controller ↔ agent connection an identity authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The agent: a TLS server (`serverAuth`).
    Agent,
    /// The controller: a TLS client (`clientAuth`).
    Controller,
}

impl Role {
    fn usage(self) -> ExtendedKeyUsagePurpose {
        match self {
            Self::Agent => ExtendedKeyUsagePurpose::ServerAuth,
            Self::Controller => ExtendedKeyUsagePurpose::ClientAuth,
        }
    }

    /// Lowercase role name used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Controller => "controller",
        }
    }

    /// The extended key usage this role's certificate carries, as RFC 5280 names it.
    pub fn extended_key_usage(self) -> &'static str {
        match self {
            Self::Agent => "serverAuth",
            Self::Controller => "clientAuth",
        }
    }

    /// The role at the other end of the connection.
    pub fn peer(self) -> Role {
        match self {
            Self::Agent => Self::Controller,
            Self::Controller => Self::Agent,
        }
    }
}

/// A PEM certificate with its PEM private key. `Debug` hides the key.
#[derive(Clone, PartialEq, Eq)]
pub struct CertifiedKey {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PEM (PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for CertifiedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertifiedKey")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

fn window(
    now: SystemTime,
    validity_days: u32,
) -> Result<(OffsetDateTime, OffsetDateTime), IssueError> {
    if !VALIDITY_DAYS.contains(&validity_days) {
        return Err(IssueError::Validity(validity_days));
    }
    let now = OffsetDateTime::from(now);
    let not_before = now - BACKDATE;
    let not_after = now + Duration::from_secs(u64::from(validity_days) * 86_400);
    Ok((not_before, not_after))
}

fn sign_err(what: impl Into<String>) -> impl FnOnce(rcgen::Error) -> IssueError {
    let what = what.into();
    move |source| IssueError::Sign { what, source }
}

/// Creates a self-signed CA valid for `validity_days` from `now`; `generation` goes in its name
/// so successive CAs are told apart.
pub fn new_ca(
    now: SystemTime,
    validity_days: u32,
    generation: u64,
) -> Result<CertifiedKey, IssueError> {
    let what = format!("ca generation {generation}");
    let (not_before, not_after) = window(now, validity_days)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(sign_err(&what))?;
    params
        .distinguished_name
        .push(DnType::CommonName, format!("hawser-agent-ca-{generation}"));
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = not_before;
    params.not_after = not_after;
    let key = KeyPair::generate().map_err(sign_err(&what))?;
    let cert = params.self_signed(&key).map_err(sign_err(&what))?;
    Ok(CertifiedKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// Issues a fresh key and certificate for `role` named `name`, signed by `ca`. The
/// certificate never outlives the CA.
pub fn new_identity(
    ca: &CertifiedKey,
    role: Role,
    name: &str,
    now: SystemTime,
    validity_days: u32,
) -> Result<CertifiedKey, IssueError> {
    let what = format!("{} identity {name}", role.as_str());
    let (not_before, mut not_after) = window(now, validity_days)?;
    let ca_info =
        cert::inspect(ca.cert_pem.as_bytes()).map_err(|e| IssueError::Ca(e.to_string()))?;
    not_after = not_after.min(OffsetDateTime::from(ca_info.not_after));

    let ca_key = KeyPair::from_pem(&ca.key_pem).map_err(|e| IssueError::Ca(e.to_string()))?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key)
        .map_err(|e| IssueError::Ca(e.to_string()))?;

    let mut params = CertificateParams::new(vec![name.to_owned()]).map_err(sign_err(&what))?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![role.usage()];
    params.use_authority_key_identifier_extension = true;
    params.not_before = not_before;
    params.not_after = not_after;
    let key = KeyPair::generate().map_err(sign_err(&what))?;
    let cert = params.signed_by(&key, &issuer).map_err(sign_err(&what))?;
    Ok(CertifiedKey {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::extensions::GeneralName;

    fn parse(pem: &str) -> x509_parser::pem::Pem {
        x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap().1
    }

    #[test]
    fn ca_is_a_self_signed_ca() {
        let ca = new_ca(SystemTime::now(), 365, 1).unwrap();
        let block = parse(&ca.cert_pem);
        let cert = block.parse_x509().unwrap();
        assert!(cert.is_ca());
        assert!(cert.key_usage().unwrap().unwrap().value.key_cert_sign());
        assert!(cert::is_signed_by(
            ca.cert_pem.as_bytes(),
            ca.cert_pem.as_bytes()
        ));
    }

    #[test]
    fn identities_carry_their_role_and_name() {
        let now = SystemTime::now();
        let ca = new_ca(now, 365, 1).unwrap();
        for (role, name) in [
            (Role::Agent, "agent.local"),
            (Role::Controller, "ctl.local"),
        ] {
            let id = new_identity(&ca, role, name, now, 30).unwrap();
            assert!(cert::is_signed_by(
                id.cert_pem.as_bytes(),
                ca.cert_pem.as_bytes()
            ));
            let block = parse(&id.cert_pem);
            let cert = block.parse_x509().unwrap();
            assert!(!cert.is_ca());
            let eku = cert.extended_key_usage().unwrap().unwrap().value;
            assert_eq!(eku.server_auth, role == Role::Agent);
            assert_eq!(eku.client_auth, role == Role::Controller);
            let san = cert.subject_alternative_name().unwrap().unwrap().value;
            assert_eq!(san.general_names, vec![GeneralName::DNSName(name)]);
        }
    }

    #[test]
    fn identity_never_outlives_its_ca() {
        let now = SystemTime::now();
        let ca = new_ca(now, 10, 1).unwrap();
        let id = new_identity(&ca, Role::Agent, "a", now, 365).unwrap();
        let (ca, id) = (
            cert::inspect(ca.cert_pem.as_bytes()).unwrap(),
            cert::inspect(id.cert_pem.as_bytes()).unwrap(),
        );
        assert!(id.not_after <= ca.not_after);
    }

    #[test]
    fn a_fresh_identity_is_valid_on_a_clock_two_days_behind_and_ends_on_time() {
        let now = SystemTime::now();
        let ca = new_ca(now, 365, 1).unwrap();
        let id = new_identity(&ca, Role::Controller, "c", now, 30).unwrap();
        for pem in [&ca.cert_pem, &id.cert_pem] {
            let info = cert::inspect(pem.as_bytes()).unwrap();
            assert!(info.not_before <= now - BACKDATE, "{info:?}");
            assert!(info.not_after > now + Duration::from_secs(29 * 86_400));
        }
        let id = cert::inspect(id.cert_pem.as_bytes()).unwrap();
        let issued = id.not_after.duration_since(now).unwrap();
        assert!(issued <= Duration::from_secs(30 * 86_400), "{issued:?}");
    }

    #[test]
    fn validity_days_are_bounded() {
        assert!(matches!(
            new_ca(SystemTime::now(), 0, 1),
            Err(IssueError::Validity(0))
        ));
        assert!(matches!(
            new_ca(SystemTime::now(), 3651, 1),
            Err(IssueError::Validity(3651))
        ));
        assert!(new_ca(SystemTime::now(), 3650, 1).is_ok());
    }

    #[test]
    fn unrelated_ca_does_not_verify() {
        let now = SystemTime::now();
        let (a, b) = (new_ca(now, 30, 1).unwrap(), new_ca(now, 30, 1).unwrap());
        let id = new_identity(&a, Role::Agent, "a", now, 30).unwrap();
        assert!(!cert::is_signed_by(
            id.cert_pem.as_bytes(),
            b.cert_pem.as_bytes()
        ));
    }
}
