//! Request bodies read to their end as they stream in: counted and hashed,
//! never held in memory, so an upload of any size or pace is accounted for
//! byte for byte.

use axum::body::Body;
use http_body_util::BodyExt as _;
use sha2::{Digest as _, Sha256};

/// What a request body added up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BodyDigest {
    /// Bytes read.
    pub(crate) bytes: u64,
    /// SHA-256 of those bytes, lowercase hex.
    pub(crate) sha256: String,
}

/// Why a body could not be read to its end.
#[derive(Debug, thiserror::Error)]
#[error("the request body broke off after {bytes} bytes: {source}")]
pub(crate) struct BodyBroken {
    /// Bytes read before it broke.
    pub(crate) bytes: u64,
    #[source]
    pub(crate) source: axum::Error,
}

/// Reads `body` frame by frame to its end (trailers are skipped).
pub(crate) async fn digest(mut body: Body) -> Result<BodyDigest, BodyBroken> {
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|source| BodyBroken { bytes, source })?;
        if let Ok(data) = frame.into_data() {
            bytes += data.len() as u64;
            hasher.update(&data);
        }
    }
    Ok(BodyDigest {
        bytes,
        sha256: hex::encode(hasher.finalize()),
    })
}
