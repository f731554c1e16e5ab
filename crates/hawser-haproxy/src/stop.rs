//! Stopping a running HAProxy master from outside, softly and within a
//! deadline: what a pod's preStop hook does in HAProxy's own container.
//!
//! ```text
//!  show proc (master CLI) ──► master pid ──SIGUSR1──► listeners close, connections finish
//!        │ busy during a reload: asked again                 │
//!        ▼                                                   ▼
//!  master gone within `drain` ──► Drained        still there ──SIGTERM──► HardStopped
//!                                                            │ (every connection cut)
//!                                          still there after `hard_stop_wait` ──► StillRunning
//! ```
//!
//! SIGUSR1 is HAProxy's soft stop: the master forwards it to its workers,
//! which stop accepting, finish the requests they hold and leave; the
//! master leaves after its last worker. SIGTERM is the hard stop. Waiting
//! on the master is waiting on the workers too, since it outlives them.
//!
//! A soft-stopped master still obeys `reload` (measured on 3.0: it forks a
//! new worker that listens again, and the master no longer leaves). So once
//! SIGUSR1 is sent, the master socket is renamed to `<socket>.stopping`:
//! an agent that would reload finds no master, and the stop stands.
//!
//! The master is watched through `/proc/<pid>/stat` with its start time, so
//! a zombie counts as gone and a reused pid is never taken for it.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use nix::{
    errno::Errno,
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use tokio::time::Instant;

use crate::{MasterCli, SocketError};

/// How often the master is checked while it drains.
const POLL: Duration = Duration::from_millis(50);

/// How long a busy master socket (a reload under way) is asked again.
const BUSY_RETRY: Duration = Duration::from_secs(10);

/// How often progress is logged while the master drains.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// A soft stop bounded by a deadline.
#[derive(Debug, Clone)]
pub struct SoftStop {
    /// The master CLI socket (`-S`) of the HAProxy to stop.
    pub master_socket: PathBuf,
    /// How long the workers may take to finish their connections after
    /// SIGUSR1 before the master is hard-stopped.
    pub drain: Duration,
    /// How long a hard-stopped master may take to leave.
    pub hard_stop_wait: Duration,
}

/// How the master left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOutcome {
    /// Every connection finished and the master left within the drain.
    Drained {
        /// The master's pid.
        master: u32,
        /// How long it took after SIGUSR1.
        took: Duration,
    },
    /// The drain ran out; the master was sent SIGTERM and left.
    HardStopped {
        /// The master's pid.
        master: u32,
    },
}

/// Why a soft stop could not be done.
#[derive(Debug, thiserror::Error)]
pub enum StopError {
    /// The master CLI did not say which process is the master.
    #[error(
        "cannot find the haproxy master through {}: is haproxy running with -S on that socket?",
        socket.display()
    )]
    Master {
        /// The master CLI socket.
        socket: PathBuf,
        /// What the socket said.
        #[source]
        source: SocketError,
    },
    /// A signal could not be sent.
    #[error("cannot send {signal} to the haproxy master (pid {pid})")]
    Signal {
        /// The master's pid.
        pid: u32,
        /// The signal.
        signal: Signal,
        /// What the kernel said.
        #[source]
        source: Errno,
    },
    /// The master outlived its hard stop.
    #[error("the haproxy master (pid {pid}) is still running {waited:?} after SIGTERM")]
    StillRunning {
        /// The master's pid.
        pid: u32,
        /// How long it was given.
        waited: Duration,
    },
}

impl StopError {
    /// A stable category for logs and metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            StopError::Master { .. } => "master_socket",
            StopError::Signal { .. } => "signal",
            StopError::StillRunning { .. } => "still_running",
        }
    }
}

impl SoftStop {
    /// Finds the master, sends it SIGUSR1 and waits up to `drain` for it to
    /// leave; then SIGTERM, and up to `hard_stop_wait` more.
    pub async fn run(&self) -> Result<StopOutcome, StopError> {
        let master = find_master(&self.master_socket).await?;
        tracing::info!(
            pid = master.pid,
            drain = ?self.drain,
            "asking the haproxy master to stop softly (SIGUSR1)"
        );
        let started = Instant::now();
        if !master.signal(Signal::SIGUSR1)? {
            return Ok(StopOutcome::Drained {
                master: master.pid,
                took: started.elapsed(),
            });
        }
        fence(&self.master_socket);
        if master.gone_within(self.drain, true).await {
            return Ok(StopOutcome::Drained {
                master: master.pid,
                took: started.elapsed(),
            });
        }
        tracing::warn!(
            pid = master.pid,
            drain = ?self.drain,
            "connections outlived the drain; hard-stopping the haproxy master (SIGTERM)"
        );
        if master.signal(Signal::SIGTERM)? && !master.gone_within(self.hard_stop_wait, false).await
        {
            return Err(StopError::StillRunning {
                pid: master.pid,
                waited: self.hard_stop_wait,
            });
        }
        Ok(StopOutcome::HardStopped { master: master.pid })
    }
}

/// The master's pid from `show proc`, asked again while a reload keeps the
/// socket busy.
async fn find_master(socket: &Path) -> Result<Watched, StopError> {
    let cli = MasterCli::new(socket);
    let deadline = Instant::now() + BUSY_RETRY;
    loop {
        match cli.show_proc().await {
            Ok(table) => return Ok(Watched::new(table.master.pid)),
            Err(SocketError::Busy { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(source) => {
                return Err(StopError::Master {
                    socket: socket.to_path_buf(),
                    source,
                });
            }
        }
    }
}

/// Renames the master socket so that nothing reloads a stopping master.
/// Not fatal: the stop still has its deadline.
fn fence(socket: &Path) {
    let mut fenced = socket.as_os_str().to_owned();
    fenced.push(".stopping");
    if let Err(error) = std::fs::rename(socket, &fenced) {
        tracing::warn!(
            socket = %socket.display(),
            %error,
            "cannot rename the master socket: a reload would undo the stop"
        );
    }
}

/// A process known by its pid and start time.
#[derive(Debug, Clone, Copy)]
struct Watched {
    pid: u32,
    started: Option<u64>,
}

impl Watched {
    fn new(pid: u32) -> Self {
        Self {
            pid,
            started: proc_stat(pid).map(|(_, started)| started),
        }
    }

    /// Running: present, not a zombie, and the same process as when found.
    fn is_running(&self) -> bool {
        match proc_stat(self.pid) {
            Some((state, started)) => {
                !matches!(state, 'Z' | 'X') && self.started.is_none_or(|s| s == started)
            }
            None => false,
        }
    }

    /// Sends `signal`; false when the process is already gone.
    fn signal(&self, signal: Signal) -> Result<bool, StopError> {
        if !self.is_running() {
            return Ok(false);
        }
        let pid = i32::try_from(self.pid).map_err(|_| StopError::Signal {
            pid: self.pid,
            signal,
            source: Errno::ESRCH,
        })?;
        match kill(Pid::from_raw(pid), signal) {
            Ok(()) => Ok(true),
            Err(Errno::ESRCH) => Ok(false),
            Err(source) => Err(StopError::Signal {
                pid: self.pid,
                signal,
                source,
            }),
        }
    }

    /// Polls until the process is gone or `limit` passes; true when gone.
    async fn gone_within(&self, limit: Duration, report: bool) -> bool {
        let started = Instant::now();
        let mut next_report = started + PROGRESS_EVERY;
        while self.is_running() {
            let now = Instant::now();
            if now >= started + limit {
                return false;
            }
            if report && now >= next_report {
                tracing::info!(
                    pid = self.pid,
                    elapsed = ?now - started,
                    "haproxy is still finishing its connections"
                );
                next_report = now + PROGRESS_EVERY;
            }
            tokio::time::sleep(POLL).await;
        }
        true
    }
}

/// The state letter and start time (in clock ticks) of `pid`, from
/// `/proc/<pid>/stat`; `None` when there is no such process.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields
    // are counted after its last ')'. Field 3 is the state, 22 the start time.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let started = fields.nth(18)?.parse().ok()?;
    Some((state, started))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_running_and_an_unused_pid_is_not() {
        let me = Watched::new(std::process::id());
        assert!(me.started.is_some());
        assert!(me.is_running());
        // Above the kernel's largest pid_max.
        assert!(!Watched::new(4_194_305).is_running());
    }

    #[test]
    fn a_reused_pid_is_not_the_process_first_seen() {
        let mut me = Watched::new(std::process::id());
        me.started = me.started.map(|s| s + 1);
        assert!(!me.is_running());
    }
}
