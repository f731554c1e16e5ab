//! Several requests on one keep-alive HTTP/1.1 connection: one connection is
//! served by one HAProxy worker, so the answers show one configuration (two
//! separate connections may straddle a reload and reach two workers).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::TIMEOUT;
use super::http::Response;

/// `GET <path>` for each host in turn, on one connection (the last request
/// asks to close). `Ok(None)` when the server closed the connection before
/// the last answer, as a worker that is stopping after a reload does.
pub async fn get_on_one_connection(
    addr: SocketAddr,
    hosts: &[&str],
    path: &str,
) -> Result<Option<Vec<Response>>, String> {
    tokio::time::timeout(TIMEOUT, exchange_all(addr, hosts, path))
        .await
        .unwrap_or_else(|_| Err(format!("no answers within {TIMEOUT:?}")))
}

async fn exchange_all(
    addr: SocketAddr,
    hosts: &[&str],
    path: &str,
) -> Result<Option<Vec<Response>>, String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let mut buffer = Vec::new();
    let mut responses = Vec::new();
    for (i, host) in hosts.iter().enumerate() {
        let last = i + 1 == hosts.len();
        let connection = if last { "close" } else { "keep-alive" };
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: hawser-e2e\r\nConnection: {connection}\r\n\r\n"
        );
        if stream.write_all(request.as_bytes()).await.is_err() && i > 0 {
            return Ok(None);
        }
        let Some(response) = read_response(&mut stream, &mut buffer).await? else {
            return if i > 0 {
                Ok(None)
            } else {
                Err(format!("{addr} closed the connection without an answer"))
            };
        };
        let closing = response
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"));
        responses.push(response);
        if closing && !last {
            return Ok(None);
        }
    }
    Ok(Some(responses))
}

/// One response with a `Content-Length` body; `None` when the connection
/// closes before any byte of it. `buffer` keeps what arrived past it.
pub async fn read_response(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> Result<Option<Response>, String> {
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        if !read_more(stream, buffer).await? {
            return if buffer.is_empty() {
                Ok(None)
            } else {
                Err(format!(
                    "connection closed inside a response head: {:?}",
                    String::from_utf8_lossy(buffer)
                ))
            };
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no status line in {head:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .ok_or_else(|| format!("a response without Content-Length: {head:?}"))?;
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        if !read_more(stream, buffer).await? {
            return Err(format!("connection closed inside a body: {head:?}"));
        }
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    Ok(Some(Response {
        status,
        headers,
        body,
        tls: None,
    }))
}

/// Reads what arrives; false at the end of the stream (or a reset).
async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<bool, String> {
    let mut chunk = [0u8; 8192];
    match stream.read(&mut chunk).await {
        Ok(0) => Ok(false),
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(false),
        Err(e) => Err(format!("receive: {e}")),
    }
}
