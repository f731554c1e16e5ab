//! An HTTP/2 client that keeps one TLS connection (ALPN `h2`) and sends GETs
//! on it back to back until stopped; when the server winds the connection
//! down (GOAWAY, as an HAProxy worker does once a reload has replaced it),
//! the client opens a new one, as browsers and HTTP/2 libraries do.
//!
//! ```text
//!  GET /h2/1, /h2/2 ... ──► connection 1 ──GOAWAY──► closed cleanly
//!          (retry if unprocessed) ──► connection 2 ──GOAWAY──► ...
//! ```
//!
//! A request is retried only when HTTP/2 itself says the server did not
//! process it, which RFC 9113 makes safe to retry whatever the method:
//! - it never left the client, the connection having been wound down
//!   already (§6.8: no new streams after a GOAWAY);
//! - its stream is above the last-stream-id of a GOAWAY, or was to be
//!   opened after one (§6.8: "can be safely retried");
//! - its stream was reset with REFUSED_STREAM (§8.7).
//!
//! Each is counted apart. Anything else, including an answer cut off or a
//! connection that ends in an error, is a failure.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::task::JoinHandle;

use super::TIMEOUT;
use super::http::tls_connect;

/// The pause between two requests: the client is always busy, and leaves
/// a two-core machine time for the rest.
const PAUSE: Duration = Duration::from_millis(5);
/// Failures kept word for word in a report.
const KEPT_FAILURES: usize = 10;

/// The client, running until [`H2KeepAlive::stop`].
#[derive(Debug)]
pub struct H2KeepAlive {
    stop: Arc<AtomicBool>,
    task: JoinHandle<H2Report>,
}

/// What the client saw.
#[derive(Debug, Default)]
pub struct H2Report {
    /// Requests answered 200 over HTTP/2 by the echo backend, for their path.
    pub answered: u64,
    /// Connections opened.
    pub connections: u64,
    /// Connections that ended cleanly: wound down and closed without error.
    pub ended_cleanly: u64,
    /// Requests that never left the client (the connection was wound down).
    pub retried_unsent: u64,
    /// Requests on a stream above a GOAWAY's last-stream-id.
    pub retried_goaway: u64,
    /// Requests whose stream was refused (REFUSED_STREAM).
    pub retried_refused: u64,
    /// Failed requests and connections that ended in an error.
    pub failures: u64,
    /// The first failures, word for word.
    pub failure_samples: Vec<String>,
}

impl std::fmt::Display for H2Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} answered on {} connections ({} ended cleanly); retried: {} unsent, {} above \
             GOAWAY, {} refused; {} failures {:?}",
            self.answered,
            self.connections,
            self.ended_cleanly,
            self.retried_unsent,
            self.retried_goaway,
            self.retried_refused,
            self.failures,
            self.failure_samples
        )
    }
}

impl H2Report {
    fn fail(&mut self, what: String) {
        self.failures += 1;
        if self.failure_samples.len() < KEPT_FAILURES {
            self.failure_samples.push(what);
        }
    }
}

/// One connection: where requests go, and the task that drives it.
struct Connection {
    sender: SendRequest<Empty<Bytes>>,
    driver: JoinHandle<Result<(), hyper::Error>>,
}

impl H2KeepAlive {
    /// Starts sending `GET https://<host>/h2/<n>` to `addr` (SNI `host`).
    pub fn start(addr: SocketAddr, host: &str) -> H2KeepAlive {
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(run(addr, host.to_string(), Arc::clone(&stop)));
        H2KeepAlive { stop, task }
    }

    /// Stops after the request in flight; returns what the client saw.
    pub async fn stop(self) -> H2Report {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("the HTTP/2 client panicked")
    }
}

/// Why a request got no answer, as far as retrying it goes.
#[derive(Debug, PartialEq, Eq)]
enum Unanswered {
    Unsent,
    AboveGoaway,
    Refused,
    Failed(String),
}

async fn run(addr: SocketAddr, host: String, stop: Arc<AtomicBool>) -> H2Report {
    let mut report = H2Report::default();
    let mut current: Option<Connection> = None;
    let mut sequence = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let usable = match current.as_mut() {
            Some(connection) => connection.sender.ready().await.is_ok(),
            None => false,
        };
        if !usable {
            // Closed or wound down: not a request lost, a connection to replace.
            if let Some(old) = current.take() {
                retire(old, &mut report).await;
            }
            match connect(addr, &host).await {
                Ok(connection) => {
                    report.connections += 1;
                    current = Some(connection);
                }
                Err(e) => {
                    report.fail(e);
                    tokio::time::sleep(PAUSE).await;
                    continue;
                }
            }
        }
        let Some(connection) = current.as_mut() else {
            continue;
        };
        sequence += 1;
        let path = format!("/h2/{sequence}");
        match exchange(connection, &host, &path).await {
            Ok(()) => report.answered += 1,
            Err(Unanswered::Unsent) => report.retried_unsent += 1,
            Err(Unanswered::AboveGoaway) => report.retried_goaway += 1,
            Err(Unanswered::Refused) => report.retried_refused += 1,
            Err(Unanswered::Failed(e)) => report.fail(format!("GET {path}: {e}")),
        }
        tokio::time::sleep(PAUSE).await;
    }
    if let Some(last) = current.take() {
        retire(last, &mut report).await;
    }
    report
}

async fn connect(addr: SocketAddr, host: &str) -> Result<Connection, String> {
    let (stream, tls) = tls_connect(addr, Some(host), &[b"h2"], None).await?;
    if tls.alpn.as_deref() != Some("h2") {
        return Err(format!("ALPN settled on {:?}, not h2", tls.alpn));
    }
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| format!("h2 handshake: {e}"))?;
    Ok(Connection {
        sender,
        driver: tokio::spawn(connection),
    })
}

/// Lets go of a connection and waits for it to end: cleanly, after the
/// server's GOAWAY, or in an error (a failure).
async fn retire(connection: Connection, report: &mut H2Report) {
    drop(connection.sender);
    match tokio::time::timeout(TIMEOUT, connection.driver).await {
        Ok(Ok(Ok(()))) => report.ended_cleanly += 1,
        Ok(Ok(Err(e))) => report.fail(format!("a connection ended in an error: {e}")),
        Ok(Err(e)) => report.fail(format!("a connection's task failed: {e}")),
        Err(_) => report.fail(format!("a connection did not end within {TIMEOUT:?}")),
    }
}

/// One GET, its answer checked: 200 over HTTP/2 from the echo, for `path`.
async fn exchange(connection: &mut Connection, host: &str, path: &str) -> Result<(), Unanswered> {
    let request = hyper::Request::get(format!("https://{host}{path}"))
        .body(Empty::<Bytes>::new())
        .map_err(|e| Unanswered::Failed(format!("request: {e}")))?;
    let answer = async {
        let response = connection
            .sender
            .try_send_request(request)
            .await
            .map_err(|e| classify(&e))?;
        let (status, version) = (response.status(), response.version());
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| Unanswered::Failed(format!("body: {e}")))?
            .to_bytes();
        let reply = serde_json::from_slice::<hawser_echo::EchoReply>(&body).map_err(|e| {
            let text = String::from_utf8_lossy(&body);
            Unanswered::Failed(format!(
                "{status} {version:?}, not an echo reply ({e}): {text}"
            ))
        })?;
        if status != 200 || version != hyper::Version::HTTP_2 || reply.path != path {
            return Err(Unanswered::Failed(format!(
                "{status} {version:?} for {}",
                reply.path
            )));
        }
        Ok(())
    };
    tokio::time::timeout(TIMEOUT, answer)
        .await
        .unwrap_or_else(|_| Err(Unanswered::Failed(format!("no answer within {TIMEOUT:?}"))))
}

/// Sorts an error into a retry HTTP/2 allows or a failure.
fn classify(error: &hyper::client::conn::TrySendError<hyper::Request<Empty<Bytes>>>) -> Unanswered {
    if error.message().is_some() {
        return Unanswered::Unsent;
    }
    let error = error.error();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(h2) = e.downcast_ref::<h2::Error>() {
            if h2.is_go_away() && h2.is_remote() {
                return Unanswered::AboveGoaway;
            }
            if h2.is_reset() && h2.is_remote() && h2.reason() == Some(h2::Reason::REFUSED_STREAM) {
                return Unanswered::Refused;
            }
        }
        source = e.source();
    }
    Unanswered::Failed(format!("{error:?}"))
}
