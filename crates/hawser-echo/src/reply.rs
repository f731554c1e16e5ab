//! The JSON body every echo answer carries, built from the request's head
//! and what its body added up to.

use std::collections::BTreeMap;

use axum::http::{StatusCode, Version, header, request::Parts};
use serde::{Deserialize, Serialize};

use crate::{EchoConfig, body::BodyDigest};

/// Request header that picks the answer's status code (200..=599).
pub const STATUS_HEADER: &str = "x-echo-status";

/// Request header that holds the answer back for that many milliseconds
/// (at most [`MAX_DELAY`]): a slow request, in flight while a test stops
/// or reloads the proxy in front.
pub const DELAY_HEADER: &str = "x-echo-delay-ms";

/// The longest delay [`DELAY_HEADER`] may ask for.
pub const MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(120);

/// Response header naming the pod that answered.
pub const POD_HEADER: &str = "x-echo-pod";

/// What the echo server saw, and who it is; the body of every answer.
///
/// Deserializable so end-to-end tests can read answers back into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EchoReply {
    /// Path and query exactly as received, e.g. `/a/b?x=1`.
    pub path: String,
    /// The `Host` header, or the HTTP/2 `:authority` when there is none.
    pub host: String,
    /// Request method, e.g. `GET`.
    pub method: String,
    /// Protocol version: `HTTP/1.0`, `HTTP/1.1` or `HTTP/2.0`.
    pub proto: String,
    /// Request headers by lowercase name, values in arrival order.
    pub headers: BTreeMap<String, Vec<String>>,
    /// The answering server's namespace.
    pub namespace: String,
    /// The ingress (or route) the server was deployed for.
    pub ingress: String,
    /// The service the server sits behind.
    pub service: String,
    /// The answering pod.
    pub pod: String,
    /// How many bytes of request body the server read (all of them: the
    /// body is read to its end as it streams in, never cut). Absent in
    /// answers of echo servers older than this field: read as 0.
    #[serde(default)]
    pub body_bytes: u64,
    /// The SHA-256 of the request body the server read, in lowercase hex
    /// (that of no bytes for an empty body). Absent in older answers: read
    /// as empty.
    #[serde(default)]
    pub body_sha256: String,
}

impl EchoReply {
    /// Describes the request head `parts`, whose body was `body`, as
    /// answered by the server `identity`.
    pub(crate) fn new(parts: &Parts, body: &BodyDigest, identity: &EchoConfig) -> Self {
        let host = parts
            .headers
            .get(header::HOST)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
            .or_else(|| parts.uri.authority().map(|authority| authority.to_string()))
            .unwrap_or_default();
        let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in &parts.headers {
            headers
                .entry(name.as_str().to_owned())
                .or_default()
                .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
        }
        Self {
            path: parts
                .uri
                .path_and_query()
                .map_or_else(|| "/".to_owned(), |pq| pq.as_str().to_owned()),
            host,
            method: parts.method.as_str().to_owned(),
            proto: proto_name(parts.version).to_owned(),
            headers,
            namespace: identity.namespace.clone(),
            ingress: identity.ingress.clone(),
            service: identity.service.clone(),
            pod: identity.pod.clone(),
            body_bytes: body.bytes,
            body_sha256: body.sha256.clone(),
        }
    }
}

/// The status the client asked for with [`STATUS_HEADER`], 200 when it asked
/// for none, or a message saying why the header's value is unusable.
pub(crate) fn requested_status(parts: &Parts) -> Result<StatusCode, String> {
    let Some(value) = parts.headers.get(STATUS_HEADER) else {
        return Ok(StatusCode::OK);
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    // 1xx are not final answers, so hyper cannot send them as one.
    text.trim()
        .parse::<u16>()
        .ok()
        .filter(|code| (200..=599).contains(code))
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| {
            format!("invalid {STATUS_HEADER} {text:?}: expected a status code in 200..=599\n")
        })
}

/// The delay [`DELAY_HEADER`] asks for: zero without the header, an error
/// for anything but milliseconds up to [`MAX_DELAY`].
pub(crate) fn requested_delay(parts: &Parts) -> Result<std::time::Duration, String> {
    let Some(value) = parts.headers.get(DELAY_HEADER) else {
        return Ok(std::time::Duration::ZERO);
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    text.trim()
        .parse::<u64>()
        .ok()
        .map(std::time::Duration::from_millis)
        .filter(|delay| *delay <= MAX_DELAY)
        .ok_or_else(|| {
            format!(
                "invalid {DELAY_HEADER} {text:?}: expected milliseconds up to {}\n",
                MAX_DELAY.as_millis()
            )
        })
}

/// The Go-style protocol name the conformance echo servers report.
fn proto_name(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_11 => "HTTP/1.1",
        Version::HTTP_2 => "HTTP/2.0",
        Version::HTTP_3 => "HTTP/3.0",
        _ => "unknown",
    }
}
