//! The echo server over real TCP: HTTP/1.1 written by hand, h2c through hyper.

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
    for field in [
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
