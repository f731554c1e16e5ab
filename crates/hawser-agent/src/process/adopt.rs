//! Finding the master already running for a layout, after the process that
//! started it crashed, so that one tree never gets two masters.
//!
//! ```text
//!  pid file ──► pid ──┐                       (a live pid that is not ours: never signalled, file removed)
//!  /proc scan ────────┴─► masters of this tree (cmdline: binary name and -C <config_dir>)
//!        │ none: a socket that still answers is a ForeignMaster; a dead one is removed
//!        ▼
//!  `show proc` on the master socket (retried ADOPT_TIMEOUT while busy or refused)
//!        ├─ names one of them ──► adopt it; stop the others
//!        ├─ names another live master ──► ForeignMaster
//!        └─ no answer ──► stop them all (SIGTERM, then SIGKILL); the caller spawns afresh
//! ```
//!
//! HAProxy binds its listeners with SO_REUSEPORT and takes over an existing
//! socket path, so a second master on the same tree starts without an error
//! and serves next to the first, overwriting the pid file and stealing the
//! master socket. The pid file alone would then hide the first master: the
//! `/proc` scan is what finds it.

use std::{
    io,
    path::Path,
    time::{Duration, Instant},
};

use hawser_haproxy::MasterCli;
use nix::sys::signal::Signal;

use super::{
    HaproxyLayout, ProcessError,
    error::io_err,
    identity::{self, ProcessIdentity, Signature},
    stop,
};

/// How long a master found running may take to answer on its socket (a
/// reload makes it refuse connections for up to about two seconds).
pub(super) const ADOPT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an unresponsive master gets to stop on SIGTERM.
const UNRESPONSIVE_GRACE: Duration = Duration::from_secs(3);

const PROBE_POLL: Duration = Duration::from_millis(100);

/// How long a master named by the pid file may look foreign (mid re-exec)
/// before it is believed foreign.
const RESCAN_TIMEOUT: Duration = Duration::from_secs(3);

/// The master to adopt, if one of this layout runs and answers; every other
/// master of the layout has been stopped when this returns `Ok`.
pub(super) async fn find(
    signature: &Signature<'_>,
    layout: &HaproxyLayout,
) -> Result<Option<ProcessIdentity>, ProcessError> {
    let masters = settled_masters(signature, layout).await;
    forget_foreign_pid_file(layout, &masters)?;
    let cli = MasterCli::new(layout.master_socket()).with_timeout(Duration::from_secs(1));
    if masters.is_empty() {
        if layout.master_socket().exists() {
            // Nothing of ours runs: anything answering is someone else's.
            if let Ok(table) = cli.show_proc().await
                && ProcessIdentity::of(table.master.pid).is_some()
            {
                return Err(foreign(table.master.pid, layout));
            }
        }
        return Ok(None);
    }

    let started = Instant::now();
    let answered = loop {
        match cli.show_proc().await {
            Ok(table) => break Some(table.master.pid),
            Err(error) if started.elapsed() < ADOPT_TIMEOUT => {
                tracing::debug!(%error, "waiting for the running haproxy master to answer");
                tokio::time::sleep(PROBE_POLL).await;
            }
            Err(error) => {
                tracing::warn!(%error, waited = ?started.elapsed(), "running haproxy master does not answer on its socket; replacing it");
                break None;
            }
        }
    };
    let adopted = answered.and_then(|pid| masters.iter().find(|m| m.pid == pid).copied());
    if let (Some(pid), None) = (answered, adopted)
        && ProcessIdentity::of(pid).is_some()
    {
        return Err(foreign(pid, layout));
    }
    for other in masters
        .iter()
        .filter(|m| Some(m.pid) != adopted.map(|a| a.pid))
    {
        tracing::warn!(
            pid = other.pid,
            "stopping an haproxy master of this layout that is not the one serving"
        );
        stop::stop_identified(
            other,
            Signal::SIGTERM,
            UNRESPONSIVE_GRACE,
            &layout.config_dir,
        )
        .await?;
    }
    Ok(adopted)
}

/// The masters of this layout. A master caught re-executing itself (a reload
/// was in flight when the previous agent died) briefly shows an empty or
/// partial command line, so while the pid file names a live process that
/// does not look like ours, look again for a moment before believing it.
async fn settled_masters(
    signature: &Signature<'_>,
    layout: &HaproxyLayout,
) -> Vec<ProcessIdentity> {
    let started = Instant::now();
    loop {
        let masters = identity::masters(&identity::scan(signature));
        let named = std::fs::read_to_string(layout.pid_file())
            .ok()
            .as_deref()
            .and_then(parse_pid_file);
        let unexplained = named.is_some_and(|pid| {
            !masters.iter().any(|m| m.pid == pid) && ProcessIdentity::of(pid).is_some()
        });
        if !unexplained || started.elapsed() >= RESCAN_TIMEOUT {
            return masters;
        }
        tokio::time::sleep(PROBE_POLL).await;
    }
}

/// Reads the pid file; when it names a pid that is not one of `masters`,
/// leaves that process alone and removes the file.
fn forget_foreign_pid_file(
    layout: &HaproxyLayout,
    masters: &[ProcessIdentity],
) -> Result<(), ProcessError> {
    let path = layout.pid_file();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(io_err("read pid file", &path)(error)),
    };
    let named = parse_pid_file(&text);
    if named.is_some_and(|pid| masters.iter().any(|m| m.pid == pid)) {
        return Ok(());
    }
    match named.and_then(ProcessIdentity::of) {
        Some(process) => tracing::warn!(
            pid = process.pid,
            pid_file = %path.display(),
            "pid file names a live process that is not an haproxy master of this layout; leaving it alone"
        ),
        None => {
            tracing::info!(pid_file = %path.display(), content = text.trim(), "removing stale pid file")
        }
    }
    remove(&path)
}

/// The pid in HAProxy's pid file (one decimal line); `None` when unusable.
pub(super) fn parse_pid_file(text: &str) -> Option<u32> {
    text.trim().parse().ok().filter(|&pid| pid > 0)
}

fn remove(path: &Path) -> Result<(), ProcessError> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            Err(io_err("remove stale pid file", path)(error))
        }
        _ => Ok(()),
    }
}

fn foreign(pid: u32, layout: &HaproxyLayout) -> ProcessError {
    ProcessError::ForeignMaster {
        pid,
        socket: layout.master_socket(),
        config_dir: layout.config_dir.clone(),
    }
}
