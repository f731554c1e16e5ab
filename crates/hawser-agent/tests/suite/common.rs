//! What the agent's tests share: the real HAProxy, free ports, the head of
//! the configurations they apply, and a request to what they serve.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use hawser_agent::AgentPaths;
use hawser_haproxy::{HAPROXY_ENV, HaproxyBinary};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long anything the tests wait for may take.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// The HAProxy named by `HAWSER_HAPROXY`; fails (never skips) without one.
pub fn haproxy() -> HaproxyBinary {
    let Some(path) = std::env::var_os(HAPROXY_ENV) else {
        panic!(
            "{HAPROXY_ENV} is not set: these tests need a real HAProxy >= 3.0; \
             run `export {HAPROXY_ENV}=$(scripts/install-haproxy.sh)` and try again"
        );
    };
    HaproxyBinary::at(&path).unwrap_or_else(|error| {
        panic!(
            "{HAPROXY_ENV}={} is not usable: {error}",
            Path::new(&path).display()
        )
    })
}

pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

/// `global` with the runtime socket the agent drives, `defaults`, and the
/// start of a frontend on `port`: a test adds its `http-request` lines.
pub fn config_head(paths: &AgentPaths, port: u16) -> String {
    format!(
        "global\n  stats socket {} mode 600 level admin\n\
         defaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n\
         frontend web\n  bind 127.0.0.1:{port}\n",
        paths.runtime_socket().display()
    )
}

/// The body of HAProxy's answer to `GET <path>` on `port`, on a connection
/// of its own.
pub async fn get_body(port: u16, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}
