//! Certificates made at test time, for TLS Secrets in fixtures.

/// A self-signed certificate and its key, in PEM.
#[derive(Debug, Clone)]
pub struct TestCertificate {
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCertificate {
    /// A self-signed certificate with subject CN `host` and SAN `host`.
    pub fn self_signed(host: &str) -> TestCertificate {
        TestCertificate::with_cn(host, host)
    }

    /// A self-signed certificate for `host` (its SAN) whose subject CN is
    /// `cn`, so that a test can tell two certificates for one host apart.
    pub fn with_cn(host: &str, cn: &str) -> TestCertificate {
        let key = rcgen::KeyPair::generate().expect("generate a key");
        let mut params =
            rcgen::CertificateParams::new(vec![host.to_string()]).expect("certificate params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let cert = params.self_signed(&key).expect("self-sign");
        TestCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// A self-signed certificate with subject CN `common_name`, SANs
    /// `names`, valid from `not_before` to `not_after` (`(year, month, day)`).
    pub fn made(
        common_name: &str,
        names: &[&str],
        not_before: (i32, u8, u8),
        not_after: (i32, u8, u8),
    ) -> TestCertificate {
        let key = rcgen::KeyPair::generate().expect("generate a key");
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = rcgen::CertificateParams::new(names).expect("certificate params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let cert = params.self_signed(&key).expect("self-sign");
        TestCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// The certificate as the inside of a double-quoted YAML string, for a
    /// fixture's `tls.crt: "${NAME}"`.
    pub fn cert_yaml(&self) -> String {
        yaml_quoted_inner(&self.cert_pem)
    }

    /// The key as the inside of a double-quoted YAML string.
    pub fn key_yaml(&self) -> String {
        yaml_quoted_inner(&self.key_pem)
    }
}

/// PEM holds base64, `-`, spaces and line breaks: only the breaks need escaping.
fn yaml_quoted_inner(pem: &str) -> String {
    pem.replace('\n', "\\n")
}
