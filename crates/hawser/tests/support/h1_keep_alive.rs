//! An HTTP/1.1 client that keeps one connection and sends GETs on it back
//! to back until stopped; when the server closes it (as an HAProxy worker
//! does once a reload has replaced it) the client opens a new one.
//!
//! ```text
//!  GET /h1/1, /h1/2 ... ──► connection 1 ──`Connection: close` or closed──► connection 2 ...
//! ```
//!
//! Two ends are counted apart from failures: an answer that says
//! `Connection: close` (the request was served), and a request sent on a
//! connection that had served others and that closed without a byte of
//! answer: the server closed the idle connection as the request went out,
//! which RFC 9112 §9.3.1 lets a client retry on a new connection for an
//! idempotent request such as a GET. Anything else is a failure.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::TIMEOUT;
use super::keep_alive::read_response;

/// The pause between two requests (see the HTTP/2 client's).
const PAUSE: Duration = Duration::from_millis(5);
/// Failures kept word for word in a report.
const KEPT_FAILURES: usize = 10;

/// The client, running until [`H1KeepAlive::stop`].
#[derive(Debug)]
pub struct H1KeepAlive {
    stop: Arc<AtomicBool>,
    task: JoinHandle<H1Report>,
}

/// What the client saw.
#[derive(Debug, Default)]
pub struct H1Report {
    /// Requests answered 200 by the echo backend, for their path.
    pub answered: u64,
    /// Connections opened.
    pub connections: u64,
    /// Answers that closed their connection (`Connection: close`).
    pub closed_after_answer: u64,
    /// Requests on a reused connection that closed without an answer.
    pub retried_on_closed_idle: u64,
    /// Anything else.
    pub failures: u64,
    /// The first failures, word for word.
    pub failure_samples: Vec<String>,
}

impl std::fmt::Display for H1Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} answered on {} connections ({} closed after an answer); retried: {} sent as \
             an idle connection closed; {} failures {:?}",
            self.answered,
            self.connections,
            self.closed_after_answer,
            self.retried_on_closed_idle,
            self.failures,
            self.failure_samples
        )
    }
}

impl H1KeepAlive {
    /// Starts sending `GET http://<host>/h1/<n>` to `addr`.
    pub fn start(addr: SocketAddr, host: &str) -> H1KeepAlive {
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(run(addr, host.to_string(), Arc::clone(&stop)));
        H1KeepAlive { stop, task }
    }

    /// Stops after the request in flight; returns what the client saw.
    pub async fn stop(self) -> H1Report {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("the HTTP/1.1 client panicked")
    }
}

/// An open connection and how many answers it has carried.
struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
    served: u64,
}

async fn run(addr: SocketAddr, host: String, stop: Arc<AtomicBool>) -> H1Report {
    let mut report = H1Report::default();
    let mut current: Option<Connection> = None;
    let mut sequence = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(PAUSE).await;
        let connection = match current.take() {
            Some(connection) => connection,
            None => match TcpStream::connect(addr).await {
                Ok(stream) => {
                    report.connections += 1;
                    Connection {
                        stream,
                        buffer: Vec::new(),
                        served: 0,
                    }
                }
                Err(e) => {
                    fail(&mut report, format!("connect {addr}: {e}"));
                    continue;
                }
            },
        };
        sequence += 1;
        let path = format!("/h1/{sequence}");
        current = exchange(connection, &host, &path, &mut report).await;
    }
    report
}

/// One GET on `connection`; returns it when it may carry the next one.
async fn exchange(
    mut connection: Connection,
    host: &str,
    path: &str,
    report: &mut H1Report,
) -> Option<Connection> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: hawser-e2e\r\n\r\n");
    let answer = async {
        if let Err(e) = connection.stream.write_all(request.as_bytes()).await {
            use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
            // Closed by the server: the request got no answer either.
            let closed = matches!(e.kind(), BrokenPipe | ConnectionReset);
            return Err((!closed).then(|| format!("send: {e}")));
        }
        read_response(&mut connection.stream, &mut connection.buffer)
            .await
            .map_err(Some)?
            .ok_or(None)
    };
    let response = match tokio::time::timeout(TIMEOUT, answer).await {
        Ok(Ok(response)) => response,
        // Closed before a byte of answer, on a connection that served others.
        Ok(Err(None)) if connection.served > 0 => {
            report.retried_on_closed_idle += 1;
            return None;
        }
        Ok(Err(error)) => {
            let error = error.unwrap_or_else(|| "closed without an answer".to_string());
            fail(report, format!("GET {path}: {error}"));
            return None;
        }
        Err(_) => {
            fail(report, format!("GET {path}: no answer within {TIMEOUT:?}"));
            return None;
        }
    };
    let reply = serde_json::from_slice::<hawser_echo::EchoReply>(&response.body);
    match reply {
        Ok(reply) if response.status == 200 && reply.path == path => report.answered += 1,
        _ => fail(
            report,
            format!("GET {path}: {} {:?}", response.status, response.text()),
        ),
    }
    connection.served += 1;
    let closing = response
        .header("connection")
        .is_some_and(|c| c.eq_ignore_ascii_case("close"));
    if closing {
        report.closed_after_answer += 1;
        return None;
    }
    Some(connection)
}

fn fail(report: &mut H1Report, what: String) {
    report.failures += 1;
    if report.failure_samples.len() < KEPT_FAILURES {
        report.failure_samples.push(what);
    }
}
