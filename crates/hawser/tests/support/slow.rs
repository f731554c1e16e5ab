//! Slow requests: each held by its echo backend (`x-echo-delay-ms`), so that
//! they are in flight while a test stops or drains the proxy in front.
//!
//! ```text
//!  SlowRequests::start(addr, host, n, delay) ──► n tasks: GET /app/slow-NN ──► HAProxy ──► echo (sleeps)
//!  expect_reached(backends): every echo logged its path (the request is past HAProxy)
//!  finish() ──► each request's Result<Response, String>
//! ```
//!
//! Also [`connect_refused`]: whether a new TCP connection is refused, what a
//! soft-stopped HAProxy does once its listeners are closed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hawser_echo::DELAY_HEADER;
use tokio::task::JoinHandle;

use super::TIMEOUT;
use super::backends::Backends;
use super::http::{self, Request, Response};

/// Requests in flight, each answered after its delay.
#[derive(Debug)]
pub struct SlowRequests {
    paths: Vec<String>,
    tasks: Vec<JoinHandle<Result<Response, String>>>,
}

impl SlowRequests {
    /// Sends `count` `GET <prefix>/slow-NN` to `addr` for `host`, each on its
    /// own connection, each asking its backend to answer after `delay`.
    pub fn start(
        addr: SocketAddr,
        host: &str,
        prefix: &str,
        count: usize,
        delay: Duration,
    ) -> SlowRequests {
        let paths: Vec<String> = (0..count)
            .map(|i| format!("{prefix}/slow-{i:02}"))
            .collect();
        let tasks = paths
            .iter()
            .map(|path| {
                let request =
                    Request::get(host, path).header(DELAY_HEADER, &delay.as_millis().to_string());
                tokio::spawn(async move { http::http1_request(addr, &request).await })
            })
            .collect();
        SlowRequests { paths, tasks }
    }

    /// Waits until every request reached an echo backend of `backends` (it
    /// logged the path): each is then past HAProxy, held by its backend.
    pub async fn expect_reached(&self, backends: &Backends) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let logged: String = backends.echos().iter().map(|e| e.output()).collect();
            let missing: Vec<&String> = self
                .paths
                .iter()
                .filter(|path| !logged.contains(&format!("path={path} ")))
                .collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "slow requests {missing:?} never reached a backend"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// How many have an answer (or an error) so far.
    pub fn finished(&self) -> usize {
        self.tasks.iter().filter(|t| t.is_finished()).count()
    }

    /// Every request's outcome, in order.
    pub async fn finish(self) -> Vec<Result<Response, String>> {
        let mut outcomes = Vec::new();
        for task in self.tasks {
            outcomes.push(task.await.expect("a slow request panicked"));
        }
        outcomes
    }
}

/// True when a TCP connection to `addr` is refused (nothing listens).
pub async fn connect_refused(addr: SocketAddr) -> bool {
    matches!(
        tokio::time::timeout(TIMEOUT, tokio::net::TcpStream::connect(addr)).await,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

/// Waits until a new connection to `addr` is refused.
pub async fn expect_refused_eventually(addr: SocketAddr, context: impl Fn() -> String) {
    let deadline = Instant::now() + TIMEOUT;
    while !connect_refused(addr).await {
        assert!(
            Instant::now() < deadline,
            "new connections to {addr} were still accepted after the soft stop\n{}",
            context()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
