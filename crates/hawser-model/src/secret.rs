//! Secret view (`v1`), trimmed to TLS material and basic-auth users.

use std::fmt;

use serde::Serialize;

use crate::ObjectKey;

/// A Secret's type, its `tls.crt` / `tls.key`, its `auth` (htpasswd lines)
/// and its other keys (the users of a Secret that maps each user to a
/// hash). The key material and the password hashes never appear in `Debug`
/// output or templates.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct Secret {
    pub key: ObjectKey,
    pub secret_type: String,
    #[serde(skip)]
    pub tls_crt: Option<Vec<u8>>,
    #[serde(skip)]
    pub tls_key: Option<Vec<u8>>,
    #[serde(skip)]
    pub auth: Option<Vec<u8>>,
    /// `ca.crt`: CA certificates a Service's pods are verified with.
    #[serde(skip)]
    pub ca_crt: Option<Vec<u8>>,
    /// Every other key: what a Secret holding one key per user holds.
    #[serde(skip)]
    pub entries: std::collections::BTreeMap<String, Vec<u8>>,
}

impl Secret {
    /// Forgets the key material and the users (the Secret is still known).
    pub fn drop_data(&mut self) {
        self.tls_crt = None;
        self.tls_key = None;
        self.auth = None;
        self.ca_crt = None;
        self.entries.clear();
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("key", &self.key)
            .field("secret_type", &self.secret_type)
            .field("tls_crt", &self.tls_crt.as_ref().map(|c| c.len()))
            .field("tls_key", &self.tls_key.as_ref().map(|_| "<redacted>"))
            .field("auth", &self.auth.as_ref().map(|_| "<redacted>"))
            .field("ca_crt", &self.ca_crt.as_ref().map(|c| c.len()))
            .field("entries", &self.entries.len())
            .finish()
    }
}
