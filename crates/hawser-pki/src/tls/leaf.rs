//! The facts about an end-entity certificate that local and peer checks report on:
//! validity window, extended key usages, DNS names. Signatures are webpki's job.

use std::time::SystemTime;

use x509_parser::extensions::GeneralName;

use crate::cert::to_system_time;
use crate::issue::Role;

/// What the checks need from one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Leaf {
    pub(super) subject: String,
    pub(super) issuer: String,
    pub(super) not_before: SystemTime,
    pub(super) not_after: SystemTime,
    server_auth: bool,
    client_auth: bool,
    pub(super) dns_names: Vec<String>,
}

impl Leaf {
    /// Parses a DER certificate; the error says why it is not one.
    pub(super) fn parse(der: &[u8]) -> Result<Leaf, String> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|e| e.to_string())?;
        let eku = cert
            .extended_key_usage()
            .map_err(|e| e.to_string())?
            .map(|ext| ext.value);
        let dns_names = cert
            .subject_alternative_name()
            .map_err(|e| e.to_string())?
            .map(|ext| {
                ext.value
                    .general_names
                    .iter()
                    .filter_map(|name| match name {
                        GeneralName::DNSName(dns) => Some((*dns).to_owned()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Leaf {
            subject: cert.subject().to_string(),
            issuer: cert.issuer().to_string(),
            not_before: to_system_time(cert.validity().not_before.timestamp()),
            not_after: to_system_time(cert.validity().not_after.timestamp()),
            server_auth: eku.is_some_and(|eku| eku.server_auth),
            client_auth: eku.is_some_and(|eku| eku.client_auth),
            dns_names,
        })
    }

    /// Whether the certificate carries `role`'s extended key usage. Stricter than webpki,
    /// which accepts a certificate without the extension: ours always carry it, and a
    /// certificate without one must not pass for either side.
    pub(super) fn serves(&self, role: Role) -> bool {
        match role {
            Role::Agent => self.server_auth,
            Role::Controller => self.client_auth,
        }
    }

    /// Whether a DNS SAN is exactly `name` (ASCII case-insensitive; no wildcards).
    pub(super) fn is_named(&self, name: &str) -> bool {
        self.dns_names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}
