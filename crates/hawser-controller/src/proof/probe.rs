//! One test request over plain HTTP/1.1, and who answered it.

use std::net::SocketAddr;
use std::time::Duration;

use hawser_crd::TestRequest;
use hawser_echo::EchoReply;
use http::{Method, Request, Uri, header};
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::Answer;

/// How long one request may take, connection included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Answers are read up to this size; an echo's is a few hundred bytes.
const BODY_LIMIT: usize = 1024 * 1024;

/// Sends `request` to `addr`; an error says why no answer came.
pub(super) async fn send(addr: SocketAddr, request: &TestRequest) -> Result<Answer, String> {
    match tokio::time::timeout(REQUEST_TIMEOUT, exchange(addr, request)).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {REQUEST_TIMEOUT:?}")),
    }
}

async fn exchange(addr: SocketAddr, request: &TestRequest) -> Result<Answer, String> {
    let outgoing = build(request)?;
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect to HAProxy on {addr}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    let driver = tokio::spawn(connection);
    let result = async {
        let response = sender
            .send_request(outgoing)
            .await
            .map_err(|e| format!("the request failed: {e}"))?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), BODY_LIMIT)
            .collect()
            .await
            .map_err(|e| format!("cannot read the {status} answer: {e}"))?
            .to_bytes();
        Ok(Answer {
            status,
            service: answering_service(&body),
        })
    }
    .await;
    driver.abort();
    result
}

fn build(request: &TestRequest) -> Result<Request<Empty<Bytes>>, String> {
    let method = Method::from_bytes(request.method_or_default().as_bytes())
        .map_err(|e| format!("cannot send method {:?}: {e}", request.method))?;
    let uri: Uri = request
        .path_or_default()
        .parse()
        .map_err(|e| format!("cannot send path {:?}: {e}", request.path))?;
    let mut builder = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, &request.host)
        .header(header::CONNECTION, "close");
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Empty::new())
        .map_err(|e| format!("cannot send the request: {e}"))
}

/// `namespace/name` from an echo's answer; `None` for anything else.
pub(super) fn answering_service(body: &[u8]) -> Option<String> {
    let reply: EchoReply = serde_json::from_slice(body).ok()?;
    (!reply.service.is_empty()).then(|| format!("{}/{}", reply.namespace, reply.service))
}
