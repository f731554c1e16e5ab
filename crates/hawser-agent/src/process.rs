//! Supervision of the one HAProxy master-worker process of a state directory.
//!
//! ```text
//!  Supervisor::start ──► adopt the master already running for this layout (we crashed and came back)
//!          │              or spawn `haproxy -W -S <run>/master.sock -C <base>/current -f haproxy.cfg -p <run>/haproxy.pid`
//!          ▼
//!  master() ──► MasterCli (reload, show proc)          wait_exit() ──► ExitInfo when the master is gone
//!          │                                                 │ (on 3.0 a dying worker takes the master with it)
//!          ▼                                                 ▼
//!  stop(grace): SIGUSR1 (or SIGTERM) → SIGKILL group    restart(): spawn again on whatever `current` points at
//! ```
//!
//! HAProxy is started with `-C <base>/current`, never the resolved version:
//! the master re-execs itself with its original arguments on every reload,
//! so each reload (and each restart) loads whatever `current` points at then.
//! The caller therefore points `current` at the last good version before
//! [`Supervisor::restart`].
//!
//! Guarantees: never two masters on one tree (a `/proc` scan finds every
//! master of the layout, whatever the pid file says); a pid is signalled only
//! after its command line and start time prove it is one of ours; children
//! are always reaped; nothing here blocks the runtime.

mod adopt;
mod error;
mod identity;
mod output;
mod spawn;
mod stop;

use std::{ffi::OsString, io, path::PathBuf, process::ExitStatus, time::Duration};

use hawser_haproxy::{HaproxyBinary, MasterCli};
use nix::sys::signal::Signal;

pub use error::ProcessError;
use identity::{ProcessIdentity, Signature};
use spawn::ChildMaster;

/// How often an adopted master (not our child) is checked for liveness.
const ADOPTED_POLL: Duration = Duration::from_millis(200);

/// How long [`Supervisor::restart`] gives a master that is somehow still
/// running to stop on SIGTERM before it is killed.
const RESTART_GRACE: Duration = Duration::from_secs(5);

/// Where one HAProxy master keeps its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaproxyLayout {
    /// Holds `master.sock` and `haproxy.pid`; created when missing.
    pub run_dir: PathBuf,
    /// Passed to `-C`: the `<base>/current` symlink, not its target.
    pub config_dir: PathBuf,
    /// Passed to `-f`, relative to `config_dir`.
    pub config_file: String,
}

impl HaproxyLayout {
    /// A layout loading `haproxy.cfg` from `config_dir`.
    pub fn new(run_dir: impl Into<PathBuf>, config_dir: impl Into<PathBuf>) -> Self {
        Self {
            run_dir: run_dir.into(),
            config_dir: config_dir.into(),
            config_file: "haproxy.cfg".to_owned(),
        }
    }

    /// The master CLI socket (`-S`).
    pub fn master_socket(&self) -> PathBuf {
        self.run_dir.join("master.sock")
    }

    /// The file HAProxy writes the master's pid to (`-p`).
    pub fn pid_file(&self) -> PathBuf {
        self.run_dir.join("haproxy.pid")
    }

    /// Makes both directories absolute without resolving symlinks: HAProxy
    /// changes directory to `config_dir`, so a relative path would mean
    /// something else at the next reload, and `current` must stay a link.
    fn absolute(mut self) -> Result<Self, ProcessError> {
        for path in [&mut self.run_dir, &mut self.config_dir] {
            *path = std::path::absolute(&*path).map_err(error::io_err("resolve", path))?;
        }
        if self.run_dir.as_os_str().as_encoded_bytes().contains(&b',') {
            return Err(ProcessError::Io {
                action: "use run directory (a comma would split haproxy's -S argument)",
                path: self.run_dir,
                source: io::ErrorKind::InvalidInput.into(),
            });
        }
        Ok(self)
    }

    fn signature<'a>(&'a self, binary_name: &'a OsString) -> Signature<'a> {
        Signature {
            binary_name,
            config_dir: &self.config_dir,
        }
    }
}

/// How [`Supervisor::start`] got its master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// A new master was started.
    Spawned,
    /// A master already running for this layout was taken over.
    Adopted,
}

/// How [`Supervisor::stop_with`] asks the master to leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    /// SIGUSR1: stop listening and let open connections finish (bounded by
    /// `hard-stop-after` in the configuration).
    Soft,
    /// SIGTERM: close everything now.
    Hard,
}

/// A master that is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    /// The master's pid.
    pub pid: u32,
    /// Its exit status; `None` for an adopted master, which is not our child.
    pub status: Option<ExitStatus>,
    /// The last lines it wrote to stderr (empty for an adopted master).
    pub output: String,
}

/// Owns the HAProxy master of one [`HaproxyLayout`].
///
/// Dropping it leaves HAProxy running, like [`Supervisor::detach`] except
/// that stderr keeps being forwarded.
#[derive(Debug)]
pub struct Supervisor {
    layout: HaproxyLayout,
    binary_name: OsString,
    master: Master,
}

#[derive(Debug)]
enum Master {
    Child(ChildMaster),
    Adopted(ProcessIdentity),
    Exited(ExitInfo),
}

impl Supervisor {
    /// Adopts the HAProxy master already running for `layout` (after a crash
    /// of the process that started it), or starts one. Never two masters on
    /// one tree: masters of the layout that do not answer are stopped first.
    pub async fn start(
        binary: &HaproxyBinary,
        layout: HaproxyLayout,
    ) -> Result<(Self, Started), ProcessError> {
        let layout = layout.absolute()?;
        tokio::fs::create_dir_all(&layout.run_dir)
            .await
            .map_err(error::io_err("create run directory", &layout.run_dir))?;
        let binary_name = binary_name(binary);
        let signature = layout.signature(&binary_name);
        if let Some(master) = adopt::find(&signature, &layout).await? {
            tracing::info!(pid = master.pid, config_dir = %layout.config_dir.display(), "adopted running haproxy master");
            let supervisor = Self {
                layout,
                binary_name,
                master: Master::Adopted(master),
            };
            return Ok((supervisor, Started::Adopted));
        }
        let child = spawn_clean(binary, &layout, &signature).await?;
        let supervisor = Self {
            layout,
            binary_name,
            master: Master::Child(child),
        };
        Ok((supervisor, Started::Spawned))
    }

    /// A client for the master socket.
    pub fn master(&self) -> MasterCli {
        MasterCli::new(self.layout.master_socket())
    }

    /// The master's pid (the last one, once it is gone).
    pub fn master_pid(&self) -> u32 {
        match &self.master {
            Master::Child(child) => child.pid,
            Master::Adopted(identity) => identity.pid,
            Master::Exited(exit) => exit.pid,
        }
    }

    /// The layout, with absolute paths.
    pub fn layout(&self) -> &HaproxyLayout {
        &self.layout
    }

    /// Resolves when the master is gone, after its workers are gone too.
    /// Cancel safe; resolves at once, with the same answer, when called again.
    pub async fn wait_exit(&mut self) -> ExitInfo {
        let exit = match &mut self.master {
            Master::Exited(exit) => return exit.clone(),
            Master::Child(child) => {
                let status = child.child.wait().await.ok();
                ExitInfo {
                    pid: child.pid,
                    status,
                    output: child.output().await,
                }
            }
            Master::Adopted(identity) => {
                while identity.is_alive() {
                    tokio::time::sleep(ADOPTED_POLL).await;
                }
                ExitInfo {
                    pid: identity.pid,
                    status: None,
                    output: String::new(),
                }
            }
        };
        let signature = self.layout.signature(&self.binary_name);
        if let Err(error) = stop::sweep(&signature, &self.layout.config_dir).await {
            tracing::warn!(%error, "haproxy workers outlived their master");
        }
        tracing::info!(pid = exit.pid, status = ?exit.status, "haproxy master is gone");
        self.master = Master::Exited(exit.clone());
        exit
    }

    /// Starts a new master after the old one died, on whatever `current`
    /// points at (the caller points it at the last good version first). An
    /// old master still running is stopped first (SIGTERM, then SIGKILL).
    pub async fn restart(&mut self, binary: &HaproxyBinary) -> Result<(), ProcessError> {
        self.terminate(Signal::SIGTERM, RESTART_GRACE).await?;
        self.wait_exit().await;
        self.binary_name = binary_name(binary);
        let signature = self.layout.signature(&self.binary_name);
        // Paranoia: whatever else runs on this layout must not outlive the restart.
        for other in identity::masters(&identity::scan(&signature)) {
            stop::stop_identified(
                &other,
                Signal::SIGTERM,
                RESTART_GRACE,
                &self.layout.config_dir,
            )
            .await?;
        }
        self.master = Master::Child(spawn_clean(binary, &self.layout, &signature).await?);
        Ok(())
    }

    /// Stops HAProxy gracefully: SIGUSR1 (stop listening, let connections
    /// finish), up to `grace` for it to leave, then SIGKILL to the master and
    /// its workers. Returns once every process is gone, with the pid file and
    /// master socket removed.
    pub async fn stop(self, grace: Duration) -> Result<(), ProcessError> {
        self.stop_with(StopMode::Soft, grace).await
    }

    /// [`Supervisor::stop`] with the choice of signal.
    pub async fn stop_with(mut self, mode: StopMode, grace: Duration) -> Result<(), ProcessError> {
        let signal = match mode {
            StopMode::Soft => Signal::SIGUSR1,
            StopMode::Hard => Signal::SIGTERM,
        };
        self.terminate(signal, grace).await?;
        self.wait_exit().await;
        stop::remove_stale_files(&self.layout)
    }

    /// Forgets the master without stopping it, as a crash of ours would:
    /// its stderr is no longer read. The next [`Supervisor::start`] on the
    /// same layout adopts it.
    pub fn detach(self) {
        if let Master::Child(child) = self.master {
            tracing::info!(pid = child.pid, "detached from haproxy master");
            child.detach();
        }
    }

    /// Sends `signal` to a running master and waits up to `grace`, then
    /// kills its process group; returns once the master is gone.
    async fn terminate(&mut self, signal: Signal, grace: Duration) -> Result<(), ProcessError> {
        let config_dir = &self.layout.config_dir;
        match &mut self.master {
            Master::Exited(_) => Ok(()),
            Master::Adopted(identity) => {
                stop::stop_identified(identity, signal, grace, config_dir).await
            }
            Master::Child(child) => {
                // `id()` is `None` once reaped; a zombie has no identity either.
                let Some(identity) = child.child.id().and_then(ProcessIdentity::of) else {
                    let _ = child.child.wait().await;
                    return Ok(());
                };
                identity.signal(signal)?;
                if tokio::time::timeout(grace, child.child.wait())
                    .await
                    .is_ok()
                {
                    return Ok(());
                }
                tracing::warn!(
                    pid = child.pid,
                    ?grace,
                    "haproxy master did not stop in time; killing it"
                );
                identity.kill_with_group()?;
                match tokio::time::timeout(stop::KILL_WAIT, child.child.wait()).await {
                    Ok(_) => Ok(()),
                    Err(_) => Err(ProcessError::StillRunning {
                        pid: child.pid,
                        config_dir: config_dir.clone(),
                        waited: stop::KILL_WAIT,
                    }),
                }
            }
        }
    }
}

/// Spawns a master on a clean run directory (no straggling worker, pid file
/// or socket), and leaves it clean again when the start fails, so nothing
/// of a failed start can pass for a master to adopt.
async fn spawn_clean(
    binary: &HaproxyBinary,
    layout: &HaproxyLayout,
    signature: &Signature<'_>,
) -> Result<ChildMaster, ProcessError> {
    stop::sweep(signature, &layout.config_dir).await?;
    stop::remove_stale_files(layout)?;
    let error = match spawn::spawn(binary, layout).await {
        Ok(child) => return Ok(child),
        Err(error) => error,
    };
    if let Err(cleanup) = stop::sweep(signature, &layout.config_dir).await {
        tracing::warn!(error = %cleanup, "processes of a failed haproxy start outlived it");
    }
    if let Err(cleanup) = stop::remove_stale_files(layout) {
        tracing::warn!(error = %cleanup, "failed to clean up after a failed haproxy start");
    }
    Err(error)
}

fn binary_name(binary: &HaproxyBinary) -> OsString {
    binary
        .path()
        .file_name()
        .map_or_else(|| binary.path().as_os_str().to_owned(), ToOwned::to_owned)
}

#[cfg(test)]
mod tests;
