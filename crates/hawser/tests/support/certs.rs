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
