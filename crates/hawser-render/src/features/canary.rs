//! Canaries: an Ingress marked `canary` takes a share of the requests of
//! the routes another Ingress serves for the same host and path, as
//! ingress-nginx's canary annotations do ("Canary" in its annotations
//! documentation): by a request header (`always` / `never`, or a value of
//! its own), then by a cookie (`always` / `never`), then by weight.

use super::annotations::Reader;
use super::values::{self, Expected};
use super::{ANNOTATION_PREFIX, AnnotationError};

/// The canary annotations (without the prefix).
pub(in crate::features) const CANARY_ANNOTATIONS: &[&str] = &[
    "canary",
    "canary-weight",
    "canary-weight-total",
    "canary-by-header",
    "canary-by-header-value",
    "canary-by-cookie",
];

/// ingress-nginx's `canary-weight-total` default.
const DEFAULT_TOTAL: u64 = 100;

/// What a canary Ingress takes of the routes it shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canary {
    /// Requests with this header (lowercase name) set to `header_value`
    /// (`always` unless said) go to the canary; `never` keeps them off it.
    pub header: Option<String>,
    pub header_value: Option<String>,
    /// Requests with this cookie set to `always` go to the canary; `never`
    /// keeps them off it.
    pub cookie: Option<String>,
    /// The share of the other requests, out of `total`.
    pub weight: u64,
    pub total: u64,
}

/// The canary an Ingress's annotations ask for, if `canary: "true"`.
pub(super) fn canary(read: &Reader<'_>) -> Result<Option<Canary>, AnnotationError> {
    let on = read.parse("canary", values::boolean)?.unwrap_or(false);
    if !on {
        if let Some(name) = CANARY_ANNOTATIONS[1..].iter().find(|n| read.has(n)) {
            return Err(AnnotationError::Needs {
                annotation: format!("{ANNOTATION_PREFIX}{name}"),
                needs: format!("{ANNOTATION_PREFIX}canary: \"true\""),
            });
        }
        return Ok(None);
    }
    let total = read
        .parse("canary-weight-total", |v| {
            values::count(v, 1..=1_000_000, "a whole number from 1 to 1000000")
        })?
        .unwrap_or(DEFAULT_TOTAL);
    let weight = read
        .parse("canary-weight", |v| {
            values::count(
                v,
                0..=1_000_000,
                "a whole number from 0 to canary-weight-total",
            )
        })?
        .unwrap_or(0);
    if weight > total {
        return Err(AnnotationError::Invalid {
            annotation: format!("{ANNOTATION_PREFIX}canary-weight"),
            value: weight.to_string(),
            expected: "at most canary-weight-total (100 unless said)",
        });
    }
    let header = read.parse("canary-by-header", token)?;
    let header_value = read.parse("canary-by-header-value", |v| {
        let ok = !v.is_empty()
            && v.len() <= 256
            && v.bytes()
                .all(|b| (b'!'..=b'~').contains(&b) && !b"\"'\\".contains(&b));
        ok.then(|| v.to_string())
            .ok_or("printable text without spaces, quotes or backslashes")
    })?;
    if header_value.is_some() && header.is_none() {
        return Err(AnnotationError::Needs {
            annotation: format!("{ANNOTATION_PREFIX}canary-by-header-value"),
            needs: format!("{ANNOTATION_PREFIX}canary-by-header"),
        });
    }
    Ok(Some(Canary {
        header: header.map(|h| h.to_ascii_lowercase()),
        header_value,
        cookie: read.parse("canary-by-cookie", token)?,
        weight,
        total,
    }))
}

/// A header or cookie name.
fn token(value: &str) -> Result<String, Expected> {
    values::name_token(value.trim())
}
