//! What the checks of a served certificate read from its `tls.crt`: the
//! leaf's validity, the names it covers, and whether the certificate of its
//! issuer travels with it. Read once, when the Secret is parsed.

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// The facts about a chain's first certificate the checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leaf {
    /// Unix seconds.
    pub not_before: i64,
    /// Unix seconds; the last second it is valid.
    pub not_after: i64,
    /// The DNS names of its subjectAltName; without any, its subject's
    /// common names (RFC 6125 §6.4.4: a CN counts only without DNS SANs).
    pub names: Vec<String>,
    /// Its issuer's distinguished name, as DER (compared) and as text
    /// (for messages).
    pub issuer: Vec<u8>,
    pub issuer_text: String,
    /// Issuer and subject are the same name: nothing completes its chain.
    pub self_issued: bool,
    /// A certificate after it in `tls.crt` is its issuer's (by name).
    pub issuer_in_chain: bool,
}

impl Leaf {
    /// Reads `leaf`, and looks for its issuer among `rest` (the chain after
    /// it; a certificate there that does not parse is no issuer).
    pub fn read(leaf: &X509Certificate<'_>, rest: &[CertificateDer<'_>]) -> Leaf {
        let issuer = leaf.issuer().as_raw().to_vec();
        let issuer_in_chain = rest.iter().any(|der| {
            x509_parser::parse_x509_certificate(der)
                .is_ok_and(|(_, cert)| cert.subject().as_raw() == issuer.as_slice())
        });
        Leaf {
            not_before: leaf.validity().not_before.timestamp(),
            not_after: leaf.validity().not_after.timestamp(),
            names: names(leaf),
            issuer_text: leaf.issuer().to_string(),
            self_issued: leaf.subject().as_raw() == issuer.as_slice(),
            issuer,
            issuer_in_chain,
        }
    }

    /// Whether `ca_pem` (a Secret's `ca.crt`) holds the leaf's issuer as a
    /// root (self-issued): then the chain is complete for every client that
    /// trusts that root, which is never sent anyway (cert-manager's CA
    /// issuer writes such Secrets).
    pub fn issued_by_root_in(&self, ca_pem: &[u8]) -> bool {
        CertificateDer::pem_slice_iter(ca_pem)
            .filter_map(Result::ok)
            .any(|der| {
                x509_parser::parse_x509_certificate(&der).is_ok_and(|(_, ca)| {
                    ca.subject().as_raw() == self.issuer.as_slice()
                        && ca.issuer().as_raw() == self.issuer.as_slice()
                })
            })
    }
}

fn names(leaf: &X509Certificate<'_>) -> Vec<String> {
    let dns: Vec<String> = leaf
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|name| match name {
                    GeneralName::DNSName(dns) => Some(dns.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    if !dns.is_empty() {
        return dns;
    }
    leaf.subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok().map(str::to_string))
        .collect()
}
