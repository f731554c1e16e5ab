//! The `ssl` library's Rust half: TLS Secrets become PEM files listed in one
//! crt-list with their SNI names, after checks HAProxy would otherwise only
//! make at load time.
//!
//! Certificates are always served through the crt-list, never a `crt` line, so
//! the agent can add, replace and remove them at runtime and a removed one
//! never leaves a dangling file reference in haproxy.cfg.
//!
//! A Secret that is malformed, or whose key does not match its certificate,
//! is refused (its hosts get the default certificate). One HAProxy can
//! serve but clients may refuse (expired, not yet valid, not for the host,
//! without its intermediate) is served with a warning ([`checks`]), and
//! its expiry is reported ([`ServedCertificate`]).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hawser_model::{Kind, ObjectKey, ObjectRef, Secret, Store};
use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::ingress::TlsUse;
use crate::report::Diagnostics;
pub use checks::CertificateWarning;
use checks::ServedFor;
pub use hawser_plan::{CRT_LIST_PATH, DEFAULT_CERT_PATH};
use hawser_plan::{CertificatePlan, CrtListEntry, CrtListPlan, FileKind, FileSet};
use leaf::Leaf;
use serde::Serialize;

mod checks;
mod leaf;
#[cfg(test)]
mod tests;

/// A certificate chain and its key, checked to belong together, as one PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct CertificatePem {
    pem: Vec<u8>,
    /// What the checks of a served certificate read ([`checks`]).
    leaf: Leaf,
}

impl std::fmt::Debug for CertificatePem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertificatePem(<redacted>)")
    }
}

impl CertificatePem {
    /// Parses and checks a `tls.crt` / `tls.key` pair: at least one certificate,
    /// one private key, and the key matches the first certificate.
    pub fn from_parts(crt: &[u8], key: &[u8]) -> Result<Self, String> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(crt)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("tls.crt is not PEM certificates: {e}"))?;
        let Some(leaf) = chain.first() else {
            return Err("tls.crt holds no certificate".to_string());
        };
        let (_, parsed) = x509_parser::parse_x509_certificate(leaf)
            .map_err(|e| format!("tls.crt: the first certificate does not parse: {e}"))?;
        let leaf = Leaf::read(&parsed, &chain[1..]);
        let private_key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| format!("tls.key is not a PEM private key: {e}"))?;
        let provider: CryptoProvider = rustls::crypto::ring::default_provider();
        CertifiedKey::from_der(chain.clone(), private_key.clone_key(), &provider)
            .map_err(|e| format!("tls.key does not match the certificate in tls.crt: {e}"))?;

        let mut pem = Vec::with_capacity(crt.len() + key.len() + 64);
        for cert in &chain {
            pem.extend_from_slice(&pem_block("CERTIFICATE", cert.as_ref()));
        }
        let key_label = match &private_key {
            PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
            PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
            _ => "PRIVATE KEY",
        };
        pem.extend_from_slice(&pem_block(key_label, private_key.secret_der()));
        Ok(CertificatePem { pem, leaf })
    }

    pub fn from_secret(secret: &Secret) -> Result<Self, String> {
        match (&secret.tls_crt, &secret.tls_key) {
            (Some(crt), Some(key)) => CertificatePem::from_parts(crt, key),
            _ => Err(format!(
                "secret of type {:?} lacks tls.crt or tls.key",
                secret.secret_type
            )),
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.pem
    }

    /// When the (first) certificate expires: its notAfter, Unix seconds.
    pub fn not_after(&self) -> i64 {
        self.leaf.not_after
    }
}

/// A Secret's certificate as it is served: what `/status` shows and the
/// expiry metric reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServedCertificate {
    pub namespace: String,
    pub name: String,
    /// The certificate's notAfter, Unix seconds.
    pub not_after: i64,
    /// The SNI names it is served for.
    pub hosts: Vec<String>,
    /// Served for its own names too (a TLS entry or listener without hosts).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub own_names: bool,
    /// What its checks found; each is a warning on the Secret and on
    /// every object in `referrers`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<CertificateWarning>,
    /// The Ingresses and Gateways that name it.
    #[serde(skip)]
    pub referrers: Vec<ObjectRef>,
}

/// Served certificates by their Secret's `namespace/name`.
pub type ServedCertificates = BTreeMap<String, ServedCertificate>;

/// The certificate served when no SNI name matches, and where it came
/// from: `source` for the plan, `secret` when it is a Secret's
/// (`settings.defaultCertificate`).
pub(crate) struct DefaultCertificate {
    pub pem: CertificatePem,
    pub source: String,
    pub secret: Option<ObjectKey>,
}

/// What [`certificates`] makes: plan entries, the crt-list, and what is
/// served.
pub(crate) struct CertificateOutput {
    pub plans: Vec<CertificatePlan>,
    pub crt_list: CrtListPlan,
    pub served: ServedCertificates,
}

/// What Secret `key` says is wrong when it does not exist.
pub(crate) const SECRET_MISSING: &str = "it does not exist";

/// The CA certificates of Secret `key` (its `ca.crt`; without one, its
/// `tls.crt`, where haproxytech's `server-ca` keeps them) and the tree path
/// they are written to; `Err` says what is wrong with the Secret. A
/// Service's pods and an Ingress's clients naming one Secret share the file.
pub(crate) fn ca_file(store: &Store, key: &ObjectKey) -> Result<(String, Vec<u8>), String> {
    let secret = store.secret(key).ok_or(SECRET_MISSING)?;
    let pem = secret
        .ca_crt
        .as_deref()
        .or(secret.tls_crt.as_deref())
        .ok_or("it has no key \"ca.crt\" (nor \"tls.crt\")")?;
    let certificates = ca_certificates(pem)?;
    Ok((
        format!("certs/ca_{}_{}.pem", key.namespace, key.name),
        certificates,
    ))
}

/// `ca.crt` as PEM certificates, each checked to parse, written back
/// canonically (nothing else can ride along).
fn ca_certificates(pem: &[u8]) -> Result<Vec<u8>, String> {
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("its key \"ca.crt\" is not PEM certificates: {e}"))?;
    if certificates.is_empty() {
        return Err("its key \"ca.crt\" holds no certificate".to_string());
    }
    let mut out = Vec::new();
    for certificate in &certificates {
        x509_parser::parse_x509_certificate(certificate)
            .map_err(|e| format!("a certificate of its key \"ca.crt\" does not parse: {e}"))?;
        out.extend_from_slice(&pem_block("CERTIFICATE", certificate.as_ref()));
    }
    Ok(out)
}

fn pem_block(label: &str, der: &[u8]) -> Vec<u8> {
    let body = BASE64.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n").into_bytes();
    for line in body.as_bytes().chunks(64) {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.extend_from_slice(format!("-----END {label}-----\n").as_bytes());
    out
}

/// Writes the certificate files and the crt-list; returns their plan
/// entries and what is served. `now` (Unix seconds, the render's clock) is
/// what validity is checked against: it only ever adds warnings.
pub(crate) fn certificates(
    store: &Store,
    uses: &BTreeMap<ObjectKey, TlsUse>,
    default: &DefaultCertificate,
    now: i64,
    files: &mut FileSet,
    diags: &mut Diagnostics,
) -> CertificateOutput {
    files.insert(
        DEFAULT_CERT_PATH,
        FileKind::Certificate,
        default.pem.as_bytes(),
    );
    let mut plans = vec![CertificatePlan {
        path: DEFAULT_CERT_PATH.to_string(),
        not_after: default.secret.as_ref().map(|_| default.pem.not_after()),
        source: default.source.clone(),
    }];
    let mut served = ServedCertificates::new();
    let mut entries = vec![CrtListEntry {
        certificate: DEFAULT_CERT_PATH.to_string(),
        sni: Vec::new(),
        options: Vec::new(),
    }];
    for (key, usage) in uses {
        let secret_ref = ObjectRef::new(Kind::Secret, key.clone());
        let secret = store.secret(key);
        let pem = match secret.map(CertificatePem::from_secret) {
            Some(Ok(pem)) => pem,
            Some(Err(reason)) => {
                diags.reject(&secret_ref, reason);
                warn_default(usage, &secret_ref, "is rejected", diags);
                continue;
            }
            None => {
                warn_default(usage, &secret_ref, "does not exist", diags);
                continue;
            }
        };
        let ca = secret.and_then(|s| s.ca_crt.as_deref());
        let certificate = served_certificate(&secret_ref, &pem, ca, usage, now);
        for warning in &certificate.warnings {
            diags.warn(&secret_ref, &warning.message);
            for referrer in &usage.referrers {
                diags.warn(referrer, &warning.message);
            }
        }
        served.insert(key.to_string(), certificate);
        let path = format!("certs/{}_{}.pem", key.namespace, key.name);
        files.insert(path.clone(), FileKind::Certificate, pem.as_bytes());
        plans.push(CertificatePlan {
            path: path.clone(),
            source: secret_ref.to_string(),
            not_after: Some(pem.not_after()),
        });
        entries.extend(crt_list_entries(&path, usage));
    }
    // Named by an Ingress too, the default is listed as that serves it.
    if let Some(key) = &default.secret
        && let Entry::Vacant(entry) = served.entry(key.to_string())
    {
        entry.insert(served_default(store, key, &default.pem, now, diags));
    }
    plans.sort_by(|a, b| a.path.cmp(&b.path));
    let crt_list = CrtListPlan {
        path: CRT_LIST_PATH.to_string(),
        entries,
    };
    files.insert(CRT_LIST_PATH, FileKind::CrtList, crt_list.to_file());
    CertificateOutput {
        plans,
        crt_list,
        served,
    }
}

/// Secret `key`'s certificate `pem`, served as the default certificate:
/// for every name no other certificate serves, so there is no host to check.
fn served_default(
    store: &Store,
    key: &ObjectKey,
    pem: &CertificatePem,
    now: i64,
    diags: &mut Diagnostics,
) -> ServedCertificate {
    let secret_ref = ObjectRef::new(Kind::Secret, key.clone());
    let ca = store.secret(key).and_then(|s| s.ca_crt.as_deref());
    let certificate = served_certificate(&secret_ref, pem, ca, &TlsUse::default(), now);
    for warning in &certificate.warnings {
        diags.warn(&secret_ref, &warning.message);
    }
    certificate
}

/// The crt-list lines of the certificate at `path`: one per client CA of its
/// hosts, and one for its own names when `usage` asks.
fn crt_list_entries(path: &str, usage: &TlsUse) -> Vec<CrtListEntry> {
    let mut entries = Vec::new();
    // Hosts whose clients must show a certificate get lines of their
    // own, one per CA: `verify optional`, so the request itself can be
    // answered 400 or 403 (see the ingress library), as ingress-nginx does.
    let mut by_ca: BTreeMap<Option<&String>, Vec<String>> = BTreeMap::new();
    for host in &usage.hosts {
        by_ca
            .entry(usage.client_ca.get(host))
            .or_default()
            .push(host.clone());
    }
    for (ca, sni) in by_ca {
        let options = ca.map_or_else(Vec::new, |ca| {
            ["ca-file", ca.as_str(), "verify", "optional"]
                .map(str::to_string)
                .to_vec()
        });
        entries.push(CrtListEntry {
            certificate: path.to_string(),
            sni,
            options,
        });
    }
    if usage.own_names {
        entries.push(CrtListEntry {
            certificate: path.to_string(),
            sni: Vec::new(),
            options: Vec::new(),
        });
    }
    entries
}

/// Secret `secret`'s certificate `pem` as `usage` serves it, checked at
/// `now`; `ca` is the Secret's `ca.crt`.
fn served_certificate(
    secret: &ObjectRef,
    pem: &CertificatePem,
    ca: Option<&[u8]>,
    usage: &TlsUse,
    now: i64,
) -> ServedCertificate {
    let leaf = &pem.leaf;
    let trusted_root = !leaf.issuer_in_chain && ca.is_some_and(|ca| leaf.issued_by_root_in(ca));
    let served_for = ServedFor {
        hosts: &usage.hosts,
        own_names: usage.own_names,
    };
    ServedCertificate {
        namespace: secret.key.namespace.clone(),
        name: secret.key.name.clone(),
        not_after: leaf.not_after,
        hosts: usage.hosts.iter().cloned().collect(),
        own_names: usage.own_names,
        warnings: checks::check(secret, leaf, trusted_root, &served_for, now),
        referrers: usage.referrers.iter().cloned().collect(),
    }
}

fn warn_default(usage: &TlsUse, secret: &ObjectRef, what: &str, diags: &mut Diagnostics) {
    for referrer in &usage.referrers {
        diags.warn(
            referrer,
            format!("TLS {secret} {what}; its hosts are served with the default certificate"),
        );
    }
}

/// A self-signed certificate for HTTPS requests that match no other.
pub fn generate_default_certificate() -> Result<CertificatePem, String> {
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params = rcgen::CertificateParams::new(vec!["hawser.invalid".to_string()])
        .map_err(|e| e.to_string())?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "hawser default certificate");
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    CertificatePem::from_parts(cert.pem().as_bytes(), key.serialize_pem().as_bytes())
}
