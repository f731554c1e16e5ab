//! The error type of HAProxy process supervision.

use std::{io, path::PathBuf, process::ExitStatus, time::Duration};

use nix::{errno::Errno, sys::signal::Signal};

/// Why HAProxy could not be started, adopted or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The HAProxy binary could not be executed at all.
    #[error("failed to start haproxy {}", path.display())]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// What `exec` said.
        #[source]
        source: io::Error,
    },

    /// HAProxy exited before it was serving, typically because the
    /// configuration does not load; `output` holds its ALERT lines.
    #[error("haproxy for {} exited during startup ({status}): {output}", config_dir.display())]
    ExitedDuringStart {
        /// The configuration directory it was started on (`-C`).
        config_dir: PathBuf,
        /// How it exited.
        status: ExitStatus,
        /// The last lines it wrote to stderr.
        output: String,
    },

    /// HAProxy was still running but not serving when the startup limit
    /// passed; it was killed.
    #[error(
        "haproxy master {pid} for {} was not ready after {waited:?} ({last}); it was killed",
        config_dir.display()
    )]
    NotReady {
        /// The master that was killed.
        pid: u32,
        /// The configuration directory it was started on (`-C`).
        config_dir: PathBuf,
        /// How long it was given.
        waited: Duration,
        /// The last answer (or error) of the master socket.
        last: String,
        /// The last lines it wrote to stderr.
        output: String,
    },

    /// A signal could not be delivered to an HAProxy process of ours.
    #[error("failed to send {signal} to haproxy pid {pid}")]
    Signal {
        /// The target.
        pid: u32,
        /// The signal.
        signal: Signal,
        /// What `kill(2)` said.
        #[source]
        source: Errno,
    },

    /// An HAProxy process of ours was still alive after SIGKILL.
    #[error("haproxy pid {pid} for {} is still running {waited:?} after SIGKILL", config_dir.display())]
    StillRunning {
        /// The process.
        pid: u32,
        /// The configuration directory it runs on.
        config_dir: PathBuf,
        /// How long it was watched after SIGKILL.
        waited: Duration,
    },

    /// A master that was not started for this layout answers on its master
    /// socket; starting another would put two masters on one tree.
    #[error(
        "haproxy master {pid} answers on {} but was not started for {}; refusing to start a second master",
        socket.display(),
        config_dir.display()
    )]
    ForeignMaster {
        /// The master the socket named.
        pid: u32,
        /// The master socket.
        socket: PathBuf,
        /// Our configuration directory.
        config_dir: PathBuf,
    },

    /// A file of the run directory could not be read, written or removed.
    #[error("failed to {action} {}", path.display())]
    Io {
        /// What was being done, e.g. `remove stale pid file`.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl ProcessError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Spawn { .. } => "spawn",
            Self::ExitedDuringStart { .. } => "exited_during_start",
            Self::NotReady { .. } => "not_ready",
            Self::Signal { .. } => "signal",
            Self::StillRunning { .. } => "still_running",
            Self::ForeignMaster { .. } => "foreign_master",
            Self::Io { .. } => "io",
        }
    }
}

/// Maps an I/O error on `path` to [`ProcessError::Io`].
pub(super) fn io_err<'a>(
    action: &'static str,
    path: &'a std::path::Path,
) -> impl FnOnce(io::Error) -> ProcessError + 'a {
    move |source| ProcessError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}
