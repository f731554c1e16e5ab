//! TCP services from a ConfigMap in either peer's form, served by the real
//! HAProxy: a plain port, one whose connections start with a PROXY header
//! (ingress-nginx's first PROXY), one that terminates TLS (haproxytech's
//! ssl), one that sends the PROXY protocol to the pods (ingress-nginx's
//! second PROXY); a port something else binds is refused alone (fixture
//! `run_tcp_services/`).

use crate::support;

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::{Backends, Manifests, Run, RunOptions, pod};

/// Sends `preamble` then a plain HTTP/1.1 request on a new connection to
/// `addr`; returns the answer's status line, or "" when the connection ends
/// without one.
async fn status_over_tcp(addr: SocketAddr, preamble: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{preamble}GET /tcp HTTP/1.1\r\nHost: tcp.example.com\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    answer.lines().next().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_services_serve_their_ports_in_either_form() {
    let backends = Backends::start(&[pod("shop", "app", "app-0")]);
    let manifests = Manifests::from_fixture("run_tcp_services", &backends.vars());
    let [plain, proxied, tls, sending] = [(); 4].map(|()| Run::spare_address());
    let config_map = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{ name: tcp-services, namespace: edge }}\ndata:\n  \
         \"{}\": shop/app:80\n  \"{}\": shop/app:http:PROXY\n  \"{}\": shop/app:80:ssl\n  \"{}\": shop/app:80::PROXY\n  \"80\": shop/app:80\n",
        plain.port(),
        proxied.port(),
        tls.port(),
        sending.port()
    );
    std::fs::write(manifests.path().join("tcp-services.yaml"), &config_map).unwrap();
    let run = Run::start_with(
        manifests.path(),
        RunOptions {
            config_tail: "  tcpServices: edge/tcp-services\n".to_string(),
            ..RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;

    assert_eq!(status_over_tcp(plain, "").await, "HTTP/1.1 200 OK");
    let client = plain.ip();
    let proxy_line = format!("PROXY TCP4 192.0.2.7 {client} 40000 {}\r\n", proxied.port());
    assert_eq!(
        status_over_tcp(proxied, &proxy_line).await,
        "HTTP/1.1 200 OK"
    );
    assert_eq!(
        status_over_tcp(proxied, "").await,
        "",
        "a connection without its PROXY header is not served"
    );
    let over_tls = run
        .get_tls_on(tls, Some("tcp.example.com"), "tcp.example.com", "/tcp")
        .await;
    assert_eq!(over_tls.status, 200);
    assert_eq!(over_tls.echo().service, "app");

    // The PROXY protocol to the pods: a backend of its own whose servers
    // send it (an echo pod does not speak it, so it is read from the tree).
    let config = std::fs::read_to_string(run.current_tree().join("haproxy.cfg")).unwrap();
    let sending_frontend = format!("frontend tcp_{}", sending.port());
    assert!(config.contains(&sending_frontend), "{config}");
    assert!(
        config
            .lines()
            .any(|l| l.trim_start().starts_with("server ") && l.contains("send-proxy")),
        "{config}"
    );
    // An entry for a port served already is refused alone.
    let http = run.http.port();
    run.write_manifest(
        "tcp-services.yaml",
        &config_map.replace("data:\n", &format!("data:\n  \"{http}\": shop/app:80\n")),
    );
    let refused = format!(
        "rejected: ConfigMap edge/tcp-services: entry \\\"{http}\\\": port {http} is served already"
    );
    run.wait_for_status("the refused entry", |s| s.to_string().contains(&refused))
        .await;
    assert_eq!(status_over_tcp(plain, "").await, "HTTP/1.1 200 OK");
}
