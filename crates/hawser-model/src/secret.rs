//! Secret view (`v1`), trimmed to TLS material.

use std::fmt;

use serde::Serialize;

use crate::ObjectKey;

/// A Secret's type and its `tls.crt` / `tls.key`. Other keys are dropped on
/// conversion; the key material never appears in `Debug` output or templates.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct Secret {
    pub key: ObjectKey,
    pub secret_type: String,
    #[serde(skip)]
    pub tls_crt: Option<Vec<u8>>,
    #[serde(skip)]
    pub tls_key: Option<Vec<u8>>,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("key", &self.key)
            .field("secret_type", &self.secret_type)
            .field("tls_crt", &self.tls_crt.as_ref().map(|c| c.len()))
            .field("tls_key", &self.tls_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}
