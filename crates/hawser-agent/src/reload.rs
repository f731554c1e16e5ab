//! A reload HAProxy 3.0 can be trusted with: `Success=1` alone is not enough
//! (a new worker can die right after it), so every reload is verified.
//!
//! ```text
//!  show servers state ─► server-state file (atomic)
//!  show proc (old workers) ─► reload (busy → retry) ─► Success=1?
//!     ─► show proc: exactly one worker, a new pid ─► show info answers from it
//!     ─► the health listener answers 200
//! ```

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use hawser_haproxy::{MasterCli, RuntimeApi, SocketError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, sleep, timeout};

/// How long a reload may take to show a new, answering worker.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);
const BUSY_RETRIES: u32 = 40;

#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("HAProxy refused the configuration:\n{log}")]
    Refused { log: String },
    #[error("the reload was not verified: {reason}")]
    NotVerified { reason: String },
    #[error("the master CLI stayed busy")]
    Busy,
    #[error(transparent)]
    Socket(#[from] SocketError),
    #[error("cannot write the server-state file {path}: {source}")]
    StateFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl ReloadError {
    /// Whether HAProxy was not asked to reload at all: the runtime API,
    /// through which the reload would be verified, refuses this process.
    pub fn never_started(&self) -> bool {
        matches!(self, ReloadError::Socket(e) if e.is_denied())
    }

    pub fn metric_label(&self) -> &'static str {
        match self {
            ReloadError::Refused { .. } => "refused",
            ReloadError::NotVerified { .. } => "not_verified",
            ReloadError::Busy => "busy",
            ReloadError::Socket(e) => e.metric_label(),
            ReloadError::StateFile { .. } => "state_file",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Reloader {
    pub master: MasterCli,
    pub runtime: RuntimeApi,
    /// The health listener, probed last.
    pub probe: Option<SocketAddr>,
}

impl Reloader {
    /// Saves server state, reloads and verifies; returns the new worker's pid.
    pub async fn reload(&self, state_file: &Path) -> Result<u32, ReloadError> {
        self.save_server_state(state_file).await?;
        let before: BTreeSet<u32> = self
            .retry_busy(|| self.master.show_proc())
            .await?
            .workers
            .iter()
            .map(|w| w.pid)
            .collect();
        let reply = self.retry_busy(|| self.master.reload()).await?;
        if !reply.success {
            return Err(ReloadError::Refused {
                log: reply.startup_log.trim().to_string(),
            });
        }
        self.verify(&before).await
    }

    async fn verify(&self, old_workers: &BTreeSet<u32>) -> Result<u32, ReloadError> {
        let deadline = Instant::now() + VERIFY_TIMEOUT;
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            match self.master.show_proc().await {
                Ok(table) => {
                    let fresh: Vec<u32> = table
                        .workers
                        .iter()
                        .map(|w| w.pid)
                        .filter(|pid| !old_workers.contains(pid))
                        .collect();
                    if let ([pid], 1) = (fresh.as_slice(), table.workers.len()) {
                        return self.check_worker(*pid, deadline).await;
                    }
                    last = format!(
                        "{} current workers, {} new",
                        table.workers.len(),
                        fresh.len()
                    );
                }
                Err(e) => last = e.to_string(),
            }
            sleep(POLL).await;
        }
        Err(ReloadError::NotVerified {
            reason: format!("no single new worker within {VERIFY_TIMEOUT:?} ({last})"),
        })
    }

    async fn check_worker(&self, pid: u32, deadline: Instant) -> Result<u32, ReloadError> {
        let mut last = String::from("no answer yet");
        while Instant::now() < deadline {
            match self.runtime.show_info().await {
                Ok(info) if info.get("Pid").is_some_and(|p| p == &pid.to_string()) => {
                    return match self.probe {
                        Some(addr) => probe(addr, deadline).await.map(|()| pid),
                        None => Ok(pid),
                    };
                }
                Ok(info) => last = format!("show info answered from pid {:?}", info.get("Pid")),
                Err(e) => last = e.to_string(),
            }
            sleep(POLL).await;
        }
        Err(ReloadError::NotVerified {
            reason: format!("worker {pid} did not answer on the runtime API ({last})"),
        })
    }

    async fn save_server_state(&self, path: &Path) -> Result<(), ReloadError> {
        let state_error = |source| ReloadError::StateFile {
            path: path.display().to_string(),
            source,
        };
        let text = match self.runtime.show_servers_state_raw().await {
            Ok(text) => text,
            // A socket this process may not use is the same after a reload,
            // which is verified through it: no reload starts.
            Err(e) if e.is_denied() => return Err(e.into()),
            // No worker answering (the bootstrap or a dead worker): nothing to keep.
            Err(_) => return Ok(()),
        };
        let tmp = path.with_extension("tmp");
        tokio::fs::write(&tmp, text).await.map_err(state_error)?;
        tokio::fs::rename(&tmp, path).await.map_err(state_error)
    }

    async fn retry_busy<T, F, Fut>(&self, mut call: F) -> Result<T, ReloadError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, SocketError>>,
    {
        for attempt in 0..BUSY_RETRIES {
            match call().await {
                Err(e) if e.is_busy() => sleep(POLL * (attempt + 1).min(4)).await,
                other => return other.map_err(ReloadError::from),
            }
        }
        Err(ReloadError::Busy)
    }
}

/// `GET /healthz` on the health listener must answer 200.
async fn probe(addr: SocketAddr, deadline: Instant) -> Result<(), ReloadError> {
    let mut last = String::new();
    while Instant::now() < deadline {
        match timeout(Duration::from_secs(2), get_status(addr)).await {
            Ok(Ok(200)) => return Ok(()),
            Ok(Ok(status)) => last = format!("status {status}"),
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "timed out".to_string(),
        }
        sleep(POLL).await;
    }
    Err(ReloadError::NotVerified {
        reason: format!("the health listener {addr} did not answer 200 ({last})"),
    })
}

async fn get_status(addr: SocketAddr) -> std::io::Result<u16> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: hawser\r\nConnection: close\r\n\r\n")
        .await?;
    let mut head = vec![0u8; 64];
    let n = stream.read(&mut head).await?;
    let line = String::from_utf8_lossy(&head[..n]);
    line.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {line:?}")))
}
