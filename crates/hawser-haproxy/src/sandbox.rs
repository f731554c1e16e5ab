//! The sandbox every run of candidate content goes through: `haproxy -c` on a
//! staged tree, and the private HAProxy that validation tests start.
//!
//! ```text
//!  Sandbox { read-only trees, socket dirs, TCP bind / connect ports, limits }
//!     │ spawn(Command)                      (environment cleared, kill on drop)
//!     ▼
//!  a thread of its own ── Landlock ruleset + no_new_privs on this thread only
//!     │                   enters the runtime, spawns: the child inherits both
//!     ▼
//!  SandboxedChild { child, enforcement } ── prlimit: CPU, address space, file size
//! ```
//!
//! HAProxy runs code while it parses (`lua-load`) and opens whatever paths
//! a configuration names, so the static policy is backed by the kernel: the
//! child may read the system files HAProxy needs and the trees it is given,
//! execute nothing but its own binary, write nothing, create unix sockets
//! only where it is told, bind and connect only the TCP ports it is told
//! (Landlock ABI 4 and later), and neither reach abstract unix sockets nor
//! signal processes outside its domain (ABI 6 and later).
//!
//! Why a thread: Landlock and `no_new_privs` apply to the calling thread, and
//! a child forked from that thread inherits its domain. Restricting a thread
//! of its own, spawning from it and letting it end restricts the child and
//! nothing else, without a `pre_exec` hook (which needs `unsafe`).
//!
//! Landlock is used in best-effort mode: on an older kernel the rules it
//! knows are enforced and the result says `Partial`; without Landlock it
//! says `None` and only the policy, the empty environment and the limits
//! hold. [`support`] reports which, once, for logs and metrics.

mod limits;
mod program;
mod rules;

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tokio::process::{Child, Command};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

pub use limits::Limits;

/// How much of the sandbox the kernel enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    /// Every Landlock rule the sandbox asks for.
    Full,
    /// The rules the kernel's Landlock ABI knows (an older kernel).
    Partial,
    /// No Landlock: the static policy, the empty environment and the
    /// resource limits only.
    None,
}

impl Enforcement {
    /// `full`, `partial` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Partial => "partial",
            Self::None => "none",
        }
    }
}

/// What this kernel gives the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSupport {
    /// How much of the sandbox is enforced.
    pub enforcement: Enforcement,
    /// The kernel's Landlock ABI version; 0 without Landlock.
    pub landlock_abi: u32,
}

/// The sandbox of one child: what it may read, where it may create unix
/// sockets, which TCP ports it may bind and connect to, and its limits.
#[derive(Debug, Clone, Default)]
pub struct Sandbox {
    read: Vec<PathBuf>,
    sockets: Vec<PathBuf>,
    bind_tcp: BTreeSet<u16>,
    connect_tcp: BTreeSet<u16>,
    limits: Limits,
}

/// A child started in a [`Sandbox`].
#[derive(Debug)]
pub struct SandboxedChild {
    /// The child; it is killed when dropped.
    pub child: Child,
    /// How much of the sandbox the kernel enforced on it.
    pub enforcement: Enforcement,
}

/// Why a sandboxed child could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The program to run could not be found or read.
    #[error("failed to resolve the program {}", path.display())]
    Program {
        /// The program as given.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },
    /// A path the caller allowed could not be opened for its rule.
    #[error("failed to open {} for the sandbox's rules", path.display())]
    Path {
        /// The path given to the sandbox.
        path: PathBuf,
        /// Why it could not be opened.
        #[source]
        source: landlock::PathFdError,
    },
    /// The kernel refused the Landlock ruleset.
    #[error("failed to build or apply the sandbox's landlock rules")]
    Ruleset(#[source] landlock::RulesetError),
    /// The program could not be started.
    #[error("failed to start {} in the sandbox", path.display())]
    Spawn {
        /// The program.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },
    /// The child's resource limits could not be set (it is killed).
    #[error("failed to set the resource limits of the sandboxed child")]
    Limits(#[source] io::Error),
    /// Spawning needs a tokio runtime to hand the child to.
    #[error("a sandboxed child can only be started inside a tokio runtime")]
    NoRuntime(#[source] tokio::runtime::TryCurrentError),
    /// The thread that spawns could not be started or ended without answering.
    #[error("the sandbox's spawning thread failed")]
    Thread(#[source] Option<io::Error>),
}

impl SandboxError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Program { .. } => "program",
            Self::Path { .. } => "path",
            Self::Ruleset(_) => "ruleset",
            Self::Spawn { .. } => "spawn",
            Self::Limits(_) => "limits",
            Self::NoRuntime(_) => "no_runtime",
            Self::Thread(_) => "thread",
        }
    }
}

impl Sandbox {
    /// A sandbox that allows only what the binary itself needs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets the child read `path` (a file, or a directory and everything beneath).
    pub fn read(mut self, path: impl Into<PathBuf>) -> Self {
        self.read.push(path.into());
        self
    }

    /// Lets the child create, connect to and remove unix sockets in the
    /// directory `dir` (HAProxy's `bind unix@` listeners of a private run).
    pub fn sockets_in(mut self, dir: impl Into<PathBuf>) -> Self {
        self.sockets.push(dir.into());
        self
    }

    /// Lets the child bind these TCP ports (any address).
    pub fn bind_tcp(mut self, ports: impl IntoIterator<Item = u16>) -> Self {
        self.bind_tcp.extend(ports);
        self
    }

    /// Lets the child connect to these TCP ports (any address).
    pub fn connect_tcp(mut self, ports: impl IntoIterator<Item = u16>) -> Self {
        self.connect_tcp.extend(ports);
        self
    }

    /// Replaces the default [`Limits`].
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Starts `command` in the sandbox, with an empty environment and
    /// `kill_on_drop`. Needs a tokio runtime (the child is registered with it).
    pub async fn spawn(&self, mut command: Command) -> Result<SandboxedChild, SandboxError> {
        command.env_clear().kill_on_drop(true);
        let program = PathBuf::from(command.as_std().get_program());
        let executables =
            program::executables(&program).map_err(|source| SandboxError::Program {
                path: program.clone(),
                source,
            })?;
        let runtime = Handle::try_current().map_err(SandboxError::NoRuntime)?;
        let sandbox = self.clone();
        let (answer, answered) = oneshot::channel();
        std::thread::Builder::new()
            .name("hawser-sandbox".to_owned())
            .spawn(move || {
                let spawned = sandbox.spawn_here(&runtime, command, &program, &executables);
                // The caller may be gone; the child then drops and is killed.
                let _ = answer.send(spawned);
            })
            .map_err(|error| SandboxError::Thread(Some(error)))?;
        answered.await.map_err(|_| SandboxError::Thread(None))?
    }

    /// Runs on the spawning thread, which keeps the restriction until it ends.
    fn spawn_here(
        &self,
        runtime: &Handle,
        mut command: Command,
        program: &Path,
        executables: &[PathBuf],
    ) -> Result<SandboxedChild, SandboxError> {
        let enforcement = rules::restrict_this_thread(self, executables)?;
        let _runtime = runtime.enter();
        let child = command.spawn().map_err(|source| SandboxError::Spawn {
            path: program.to_owned(),
            source,
        })?;
        // From here on `child` is killed on any error, when it drops.
        self.limits.apply(&child).map_err(SandboxError::Limits)?;
        Ok(SandboxedChild { child, enforcement })
    }
}

/// What the kernel gives the sandbox, probed once (on a thread of its own,
/// which is restricted as a child would be and then ends).
pub fn support() -> SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    *SUPPORT.get_or_init(|| {
        std::thread::Builder::new()
            .name("hawser-sandbox-probe".to_owned())
            .spawn(rules::probe)
            .ok()
            .and_then(|probe| probe.join().ok())
            .unwrap_or(SandboxSupport {
                enforcement: Enforcement::None,
                landlock_abi: 0,
            })
    })
}

/// [`support`], logged: a warning when the kernel does not enforce the
/// whole sandbox. Logs once however often it is called; commands call it at
/// start.
pub fn announce() -> SandboxSupport {
    static ANNOUNCED: std::sync::Once = std::sync::Once::new();
    let support = support();
    ANNOUNCED.call_once(|| match support.enforcement {
        Enforcement::Full => tracing::info!(
            landlock_abi = support.landlock_abi,
            "checks of candidate content run in a Landlock sandbox"
        ),
        // Only the newest rule missing: files, exec, TCP, signals and
        // abstract sockets are enforced, and the policy refuses socket
        // paths outside the tree anyway. Worth a line, not a warning.
        Enforcement::Partial if support.landlock_abi >= 6 => tracing::info!(
            landlock_abi = support.landlock_abi,
            "checks of candidate content run in a Landlock sandbox, all but its rule on unix sockets outside the tree (Landlock ABI 9); the configuration policy refuses those"
        ),
        Enforcement::Partial => tracing::warn!(
            landlock_abi = support.landlock_abi,
            "this kernel's Landlock enforces only part of the sandbox around checks of candidate content ({}); the configuration policy still holds",
            if support.landlock_abi >= 4 {
                "not the abstract-socket and signal scopes"
            } else {
                "not its TCP rules nor the abstract-socket and signal scopes"
            }
        ),
        Enforcement::None => tracing::warn!(
            "this kernel has no Landlock: checks of candidate content run without a sandbox, under the configuration policy, an empty environment and resource limits only"
        ),
    });
    support
}

#[cfg(test)]
mod tests;
