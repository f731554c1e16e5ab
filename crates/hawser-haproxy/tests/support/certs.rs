//! Self-signed certificates for the SSL tests, made fresh for every run.

/// A certificate and key (PEM, certificate first) for `name`, with a new
/// key and therefore a new serial each call.
pub fn pem(name: &str) -> String {
    let (cert, key) = parts(name);
    format!("{cert}{key}")
}

/// The certificate and the key of a new pair for `name`, as separate PEMs.
pub fn parts(name: &str) -> (String, String) {
    let certified = rcgen::generate_simple_self_signed(vec![name.to_owned()])
        .expect("failed to generate a test certificate");
    (certified.cert.pem(), certified.signing_key.serialize_pem())
}
