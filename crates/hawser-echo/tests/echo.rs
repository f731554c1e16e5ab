//! The echo server over real TCP: HTTP/1.1 written by hand, h2c and gRPC
//! through hyper, WebSockets through tokio-tungstenite.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers, like tests, fail loudly on setup errors"
)]

use std::net::SocketAddr;

use hawser_echo::{EchoConfig, EchoReply, EchoServer};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::oneshot,
    task::JoinHandle,
};

/// A running echo server and the handles to stop it.
struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), hawser_echo::EchoError>>,
}

async fn start_echo() -> Running {
    let config = EchoConfig {
        namespace: "demo".into(),
        pod: "echo-7d9f-abc12".into(),
        service: "echo".into(),
        ingress: "echo-ingress".into(),
        ..EchoConfig::new("127.0.0.1:0".parse().unwrap())
    };
    let server = EchoServer::bind(config).await.unwrap();
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0, "port 0 should resolve to the bound port");
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    Running { addr, stop, task }
}

/// Sends `request` verbatim and returns (status, head, body) of the answer.
async fn raw_http1(addr: SocketAddr, request: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("no end of head");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

#[tokio::test]
async fn http1_request_is_echoed_as_json() {
    let echo = start_echo().await;
    let (status, head, body) = raw_http1(
        echo.addr,
        "POST /a/b?x=1&y=2 HTTP/1.1\r\nHost: demo.example.com\r\nX-Test: one\r\n\
         X-Test: two\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    )
    .await;
    assert_eq!(status, 200);
    assert!(head.contains("content-type: application/json"), "{head}");
    assert!(head.contains("x-echo-pod: echo-7d9f-abc12"), "{head}");

    let reply: EchoReply = serde_json::from_str(&body).unwrap();
    assert_eq!(reply.path, "/a/b?x=1&y=2");
    assert_eq!(reply.host, "demo.example.com");
    assert_eq!(reply.method, "POST");
    assert_eq!(reply.proto, "HTTP/1.1");
    assert_eq!(reply.headers["x-test"], ["one", "two"]);
    assert_eq!(reply.headers["host"], ["demo.example.com"]);
    assert_eq!(reply.namespace, "demo");
    assert_eq!(reply.ingress, "echo-ingress");
    assert_eq!(reply.service, "echo");
    assert_eq!(reply.pod, "echo-7d9f-abc12");

    // The field names are the wire contract other tools read, not just serde's.
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply.body_bytes, 5);
    assert_eq!(
        reply.body_sha256,
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    );
    for field in [
        "body_bytes",
        "body_sha256",
        "path",
        "host",
        "method",
        "proto",
        "headers",
        "namespace",
        "ingress",
        "service",
        "pod",
    ] {
        assert!(json.get(field).is_some(), "missing {field} in {json}");
    }
}

#[tokio::test]
async fn h2c_prior_knowledge_is_served_on_the_same_port() {
    let echo = start_echo().await;
    let stream = TcpStream::connect(echo.addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);

    let request = hyper::Request::builder()
        .method("PUT")
        .uri("http://h2.example.com/v2/items?id=7")
        .header("x-test", "h2")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), hyper::Version::HTTP_2);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = response.into_body().collect().await.unwrap().to_bytes();

    let reply: EchoReply = serde_json::from_slice(&body).unwrap();
    assert_eq!(reply.proto, "HTTP/2.0");
    assert_eq!(reply.method, "PUT");
    assert_eq!(reply.host, "h2.example.com");
    assert_eq!(reply.path, "/v2/items?id=7");
    assert_eq!(reply.headers["x-test"], ["h2"]);
    assert_eq!(reply.pod, "echo-7d9f-abc12");
}

#[tokio::test]
async fn echo_status_header_picks_the_status() {
    let echo = start_echo().await;
    let (status, _, body) = raw_http1(
        echo.addr,
        "DELETE /gone HTTP/1.1\r\nHost: a\r\nX-Echo-Status: 503\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 503);
    let reply: EchoReply = serde_json::from_str(&body).unwrap();
    assert_eq!(reply.method, "DELETE");
    assert_eq!(reply.path, "/gone");

    let (status, _, body) = raw_http1(
        echo.addr,
        "GET / HTTP/1.1\r\nHost: a\r\nX-Echo-Status: 42\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 400);
    assert!(body.contains("x-echo-status"), "{body}");
}

#[tokio::test]
async fn shutdown_stops_the_server_cleanly() {
    let echo = start_echo().await;
    let (status, _, _) = raw_http1(echo.addr, "GET / HTTP/1.0\r\nHost: a\r\n\r\n").await;
    assert_eq!(status, 200);
    echo.stop.send(()).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), echo.task)
        .await
        .expect("server did not stop within 5 s")
        .unwrap()
        .unwrap();
    assert!(TcpStream::connect(echo.addr).await.is_err());
}

#[tokio::test]
async fn a_body_of_any_size_is_read_whole_and_accounted_for() {
    use sha2::{Digest as _, Sha256};
    let echo = start_echo().await;
    // Past the 1 MiB the server used to read, in chunks of odd sizes.
    let body: Vec<u8> = (0..3 * 1024 * 1024 + 7).map(|i| (i % 251) as u8).collect();
    let mut stream = TcpStream::connect(echo.addr).await.unwrap();
    stream
        .write_all(
            b"POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\
              Connection: close\r\n\r\n",
        )
        .await
        .unwrap();
    for chunk in body.chunks(100_003) {
        let head = format!("{:x}\r\n", chunk.len());
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(chunk).await.unwrap();
        stream.write_all(b"\r\n").await.unwrap();
    }
    stream.write_all(b"0\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8(answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, json) = answer.split_once("\r\n\r\n").unwrap();
    let reply: EchoReply = serde_json::from_str(json).unwrap();
    assert_eq!(reply.body_bytes, body.len() as u64);
    assert_eq!(reply.body_sha256, hex::encode(Sha256::digest(&body)));
}

/// A gRPC message: flag 0, big-endian length, payload.
fn grpc_frame(payload: &[u8]) -> Bytes {
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(payload);
    Bytes::from(frame)
}

#[tokio::test]
async fn a_streaming_grpc_call_echoes_each_message_as_it_arrives() {
    use http_body_util::channel::Channel;
    let echo = start_echo().await;
    let stream = TcpStream::connect(echo.addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let (mut messages, body) = Channel::<Bytes, std::convert::Infallible>::new(4);
    let request = hyper::Request::post("http://grpc.example.com/echo.Echo/Stream")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header(hawser_echo::STREAM_HEADER, "1")
        .body(body)
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/grpc");
    let mut answer = response.into_body();
    // Each message comes back before the next is sent: a stream, not a batch.
    // The second message arrives in two pieces, split inside its prefix.
    for (i, payload) in [&b"one"[..], &[7u8; 70_000][..], &b""[..]]
        .iter()
        .enumerate()
    {
        let frame = grpc_frame(payload);
        if i == 1 {
            messages.send_data(frame.slice(..3)).await.unwrap();
            messages.send_data(frame.slice(3..)).await.unwrap();
        } else {
            messages.send_data(frame.clone()).await.unwrap();
        }
        let mut echoed = Vec::new();
        while echoed.len() < frame.len() {
            let next = answer.frame().await.unwrap().unwrap();
            echoed.extend_from_slice(&next.into_data().unwrap());
        }
        assert_eq!(echoed, frame, "message {i}");
    }
    drop(messages);
    let trailers = answer
        .frame()
        .await
        .unwrap()
        .unwrap()
        .into_trailers()
        .unwrap();
    assert_eq!(trailers["grpc-status"], "0");
    assert!(answer.frame().await.is_none());
}

#[tokio::test]
async fn a_grpc_call_without_the_stream_header_is_answered_with_json() {
    let echo = start_echo().await;
    let stream = TcpStream::connect(echo.addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::post("http://grpc.example.com/echo.Echo/Unary")
        .header("content-type", "application/grpc")
        .body(http_body_util::Full::new(grpc_frame(b"hi")))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let reply: EchoReply = serde_json::from_slice(&body).unwrap();
    assert_eq!(reply.path, "/echo.Echo/Unary");
    assert_eq!(reply.body_bytes, 7);
}

#[tokio::test]
async fn a_websocket_echoes_every_message_until_closed() {
    use futures_util::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let echo = start_echo().await;
    let stream = TcpStream::connect(echo.addr).await.unwrap();
    let (mut socket, response) =
        tokio_tungstenite::client_async(format!("ws://{}/chat", echo.addr), stream)
            .await
            .unwrap();
    assert_eq!(response.status(), 101);
    assert_eq!(response.headers()["x-echo-pod"], "echo-7d9f-abc12");
    for message in [
        Message::text("hello"),
        Message::binary(vec![0u8, 1, 2, 255]),
        Message::text("again"),
    ] {
        socket.send(message.clone()).await.unwrap();
        assert_eq!(socket.next().await.unwrap().unwrap(), message);
    }
    socket.close(None).await.unwrap();
    // The server answers the close, and the socket ends.
    loop {
        match socket.next().await {
            Some(Ok(Message::Close(_))) => continue,
            None => break,
            Some(other) => panic!("a message after close: {other:?}"),
        }
    }
}

/// Oracle: the answer to a request asking `x-echo-delay-ms: 400` arrives no
/// sooner than 400 ms after it was sent (a lower bound, never raced), and a
/// delay that is not milliseconds up to the maximum is a 400 naming the header.
#[tokio::test]
async fn echo_delay_header_holds_the_answer_back() {
    let echo = start_echo().await;
    let sent = std::time::Instant::now();
    let (status, _, _) = raw_http1(
        echo.addr,
        "GET / HTTP/1.1\r\nHost: a\r\nX-Echo-Delay-Ms: 400\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200);
    assert!(sent.elapsed() >= std::time::Duration::from_millis(400));

    for bad in ["soon", "-1", "999999999"] {
        let (status, _, body) = raw_http1(
            echo.addr,
            &format!(
                "GET / HTTP/1.1\r\nHost: a\r\nX-Echo-Delay-Ms: {bad}\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert_eq!(status, 400, "{bad}");
        assert!(body.contains("x-echo-delay-ms"), "{body}");
    }
}
