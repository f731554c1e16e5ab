//! A GET against hawser's own admin listener, just enough HTTP for it.
//!
//! The request is HTTP/1.0, so the answer is never chunked and ends when
//! the server closes the connection: the whole client is a write, a
//! bounded read and a split at the blank line. A full HTTP client would
//! be a dependency for two loopback requests.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::SourceError;

/// The most a section may weigh; `/metrics` of thousands of routes is a
/// few megabytes.
const MAX_BODY_BYTES: u64 = 64 << 20;

/// The body of `GET path` when the answer is 200.
pub async fn get(admin: SocketAddr, path: &'static str) -> Result<Vec<u8>, SourceError> {
    let unreachable = |source| SourceError::AdminUnreachable {
        admin,
        path,
        source,
    };
    let mut stream = TcpStream::connect(admin).await.map_err(unreachable)?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: hawser\r\n\r\n").as_bytes())
        .await
        .map_err(unreachable)?;
    let mut reply = Vec::new();
    stream
        .take(MAX_BODY_BYTES + 1)
        .read_to_end(&mut reply)
        .await
        .map_err(unreachable)?;
    let bad = |reason: String| SourceError::AdminReply {
        admin,
        path,
        reason,
    };
    if reply.len() as u64 > MAX_BODY_BYTES {
        return Err(bad(format!("larger than {MAX_BODY_BYTES} bytes")));
    }
    let Some(split) = reply.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(bad("not an HTTP answer (no end of headers)".to_string()));
    };
    let head = String::from_utf8_lossy(&reply[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| bad(format!("not an HTTP status line: {:?}", first_line(&head))))?;
    let body = reply[split + 4..].to_vec();
    if status != 200 {
        let text = String::from_utf8_lossy(&body);
        return Err(bad(format!("answered {status}: {}", first_line(&text))));
    }
    Ok(body)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
