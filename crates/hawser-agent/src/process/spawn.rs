//! Starting a master and waiting until it serves.
//!
//! ```text
//!  haproxy -W -S <run>/master.sock,mode,600 -C <config_dir> -f <config_file> -p <run>/haproxy.pid
//!     │ own process group, stdin /dev/null, stdout inherited, stderr → output::forward
//!     ▼
//!  poll `show proc` every 50 ms until it names this master with one worker
//!  and the pid file names this master (HAProxy 3.1+ writes it once the worker is ready)
//!     ├─ the process exits first ──► ExitedDuringStart { status, output }
//!     └─ READY_TIMEOUT passes ─────► SIGKILL the group ──► NotReady
//! ```

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use hawser_haproxy::{HaproxyBinary, MasterCli};
use tokio::{
    process::{Child, Command},
    task::JoinHandle,
};

use super::{
    HaproxyLayout, ProcessError,
    identity::ProcessIdentity,
    output::{self, OutputTail},
};

/// How long a new master may take to list its worker.
pub(super) const READY_TIMEOUT: Duration = Duration::from_secs(10);

const READY_POLL: Duration = Duration::from_millis(50);

/// A master we started, serving.
#[derive(Debug)]
pub(super) struct ChildMaster {
    pub(super) child: Child,
    pub(super) pid: u32,
    tail: OutputTail,
    forwarder: JoinHandle<()>,
}

impl ChildMaster {
    /// The last lines it wrote, after giving the forwarder a moment to read
    /// what a dying process wrote last.
    pub(super) async fn output(&mut self) -> String {
        output::drain(&mut self.forwarder, &self.tail).await
    }

    /// Stops forwarding its stderr (closing our end of the pipe, as a crash
    /// of ours would) and forgets it; tokio reaps it if it exits later.
    pub(super) fn detach(self) {
        self.forwarder.abort();
    }
}

/// Starts a master for `layout` and waits until it serves.
pub(super) async fn spawn(
    binary: &HaproxyBinary,
    layout: &HaproxyLayout,
) -> Result<ChildMaster, ProcessError> {
    let mut socket = layout.master_socket().into_os_string();
    socket.push(",mode,600");
    let mut child = Command::new(binary.path())
        .arg("-W")
        .arg("-S")
        .arg(socket)
        .arg("-C")
        .arg(&layout.config_dir)
        .arg("-f")
        .arg(&layout.config_file)
        .arg("-p")
        .arg(layout.pid_file())
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        // A Ctrl-C on our terminal must reach us, not HAProxy: we stop it.
        .process_group(0)
        .spawn()
        .map_err(|source| ProcessError::Spawn {
            path: binary.path().to_path_buf(),
            source,
        })?;
    // `id()` is `None` only once the child has been reaped, which nothing
    // could have done yet.
    let pid = child.id().unwrap_or_default();
    let tail = OutputTail::default();
    let forwarder = match child.stderr.take() {
        Some(stderr) => output::forward(stderr, tail.clone(), pid),
        None => tokio::spawn(async {}),
    };
    let mut master = ChildMaster {
        child,
        pid,
        tail,
        forwarder,
    };
    tracing::info!(pid, config_dir = %layout.config_dir.display(), "started haproxy master");
    wait_ready(&mut master, layout).await?;
    Ok(master)
}

async fn wait_ready(master: &mut ChildMaster, layout: &HaproxyLayout) -> Result<(), ProcessError> {
    let cli = MasterCli::new(layout.master_socket()).with_timeout(Duration::from_secs(1));
    let started = Instant::now();
    loop {
        let exited = match master.child.try_wait() {
            Ok(status) => status,
            Err(source) => {
                return Err(ProcessError::Io {
                    action: "wait for haproxy master",
                    path: layout.config_dir.clone(),
                    source,
                });
            }
        };
        if let Some(status) = exited {
            return Err(ProcessError::ExitedDuringStart {
                config_dir: layout.config_dir.clone(),
                status,
                output: master.output().await,
            });
        }
        let last = match cli.show_proc().await {
            // HAProxy 3.1 and later list a worker while it still loads its
            // configuration, and write the pid file only once it reported
            // ready (3.0 writes it before forking): ready is both.
            Ok(table) if table.master.pid == master.pid && table.workers.len() == 1 => {
                if pid_file_names(layout, master.pid) {
                    return Ok(());
                }
                format!(
                    "show proc lists the worker, but {} does not name master {} yet",
                    layout.pid_file().display(),
                    master.pid
                )
            }
            Ok(table) => format!(
                "show proc names master {} with {} workers",
                table.master.pid,
                table.workers.len()
            ),
            Err(error) => error.to_string(),
        };
        let waited = started.elapsed();
        if waited >= READY_TIMEOUT {
            kill(master).await;
            return Err(ProcessError::NotReady {
                pid: master.pid,
                config_dir: layout.config_dir.clone(),
                waited,
                last,
                output: master.output().await,
            });
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// True when the layout's pid file holds `pid`.
fn pid_file_names(layout: &HaproxyLayout, pid: u32) -> bool {
    std::fs::read_to_string(layout.pid_file())
        .ok()
        .as_deref()
        .and_then(super::adopt::parse_pid_file)
        == Some(pid)
}

/// SIGKILLs a master that never became ready, with its workers, and reaps it.
async fn kill(master: &mut ChildMaster) {
    match ProcessIdentity::of(master.pid).map(|identity| identity.kill_with_group()) {
        Some(Ok(_)) => {}
        Some(Err(error)) => {
            tracing::warn!(%error, "failed to kill an haproxy that never became ready")
        }
        None => {
            let _ = master.child.start_kill();
        }
    }
    let _ = master.child.wait().await;
}
