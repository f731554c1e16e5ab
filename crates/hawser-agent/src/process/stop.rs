//! Stopping HAProxy processes that are not (or no longer) our children, and
//! clearing what a dead master leaves behind.
//!
//! ```text
//!  signal (SIGUSR1 soft / SIGTERM hard) ──grace──► SIGKILL the master's group ──KILL_WAIT──► StillRunning
//!  after any master is gone: sweep its workers (they leave when the master dies), remove pid file and socket
//! ```

use std::{io, path::Path, time::Duration};

use nix::sys::signal::Signal;

use super::{
    HaproxyLayout, ProcessError,
    error::io_err,
    identity::{self, ProcessIdentity, Signature},
};

/// How long a process may take to disappear after SIGKILL.
pub(super) const KILL_WAIT: Duration = Duration::from_secs(5);

/// How long a dead master's workers get to notice and exit on their own.
const SWEEP_WAIT: Duration = Duration::from_secs(2);

const POLL: Duration = Duration::from_millis(50);

/// Sends `signal` to `master`, waits up to `grace`, then SIGKILLs it with
/// its process group and waits until it is gone.
pub(super) async fn stop_identified(
    master: &ProcessIdentity,
    signal: Signal,
    grace: Duration,
    config_dir: &Path,
) -> Result<(), ProcessError> {
    if !master.signal(signal)? || gone_within(master, grace).await {
        return Ok(());
    }
    tracing::warn!(
        pid = master.pid,
        ?grace,
        "haproxy master did not stop in time; killing it"
    );
    master.kill_with_group()?;
    if gone_within(master, KILL_WAIT).await {
        Ok(())
    } else {
        Err(ProcessError::StillRunning {
            pid: master.pid,
            config_dir: config_dir.to_path_buf(),
            waited: KILL_WAIT,
        })
    }
}

/// Polls until `process` is gone or `limit` passes; true when gone.
pub(super) async fn gone_within(process: &ProcessIdentity, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while process.is_alive() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
    true
}

/// After the master is gone: waits for every remaining process of the
/// layout (its workers) to leave, SIGKILLs the ones that do not.
pub(super) async fn sweep(
    signature: &Signature<'_>,
    config_dir: &Path,
) -> Result<(), ProcessError> {
    let deadline = tokio::time::Instant::now() + SWEEP_WAIT;
    let mut left = identity::scan(signature);
    while !left.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
        left = identity::scan(signature);
    }
    for (process, _) in &left {
        tracing::warn!(
            pid = process.pid,
            "haproxy process outlived its master; killing it"
        );
        process.kill_with_group()?;
    }
    for (process, _) in &left {
        if !gone_within(process, KILL_WAIT).await {
            return Err(ProcessError::StillRunning {
                pid: process.pid,
                config_dir: config_dir.to_path_buf(),
                waited: KILL_WAIT,
            });
        }
    }
    Ok(())
}

/// Removes the pid file and master socket a dead master left (HAProxy 3.0
/// removes neither, even on a clean exit).
pub(super) fn remove_stale_files(layout: &HaproxyLayout) -> Result<(), ProcessError> {
    for (path, action) in [
        (layout.pid_file(), "remove stale pid file"),
        (layout.master_socket(), "remove stale master socket"),
    ] {
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::debug!(path = %path.display(), "removed stale file"),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_err(action, &path)(error)),
        }
    }
    Ok(())
}
