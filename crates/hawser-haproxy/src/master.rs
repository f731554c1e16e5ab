//! The master CLI client: `reload`, `show proc`, `show startup-logs`.
//!
//! ```text
//!  MasterCli ──"reload;quit"──► master (-S socket) ──► ReloadReply { success, startup_log }
//!            ──"show proc;quit"──────────────────────► ProcTable { master, workers, old_workers }
//!            ──"show startup-logs;quit"──────────────► String
//! ```
//!
//! Every call opens its own session, ends it with `;quit` and a half-close,
//! and is bounded by a timeout. While the master re-executes itself for a
//! reload it refuses connections and cuts open sessions; both come back as
//! [`SocketError::Busy`], which is not a failure.
//!
//! On HAProxy 3.0, `Success=1` only means the new worker was forked: check
//! [`MasterCli::show_proc`] afterwards.

mod proc_table;

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

pub use proc_table::{Proc, ProcTable};

use crate::{
    DEFAULT_COMMAND_TIMEOUT, SocketError,
    cli::{self, Command, Peer},
};

/// Default limit for a `reload` round trip (parsing a large configuration
/// takes about half a second).
pub const DEFAULT_RELOAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A client for HAProxy's master CLI socket (`haproxy -W -S <socket>`).
#[derive(Debug, Clone)]
pub struct MasterCli {
    socket: PathBuf,
    timeout: Duration,
    reload_timeout: Duration,
}

/// What the master answered to `reload`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadReply {
    /// `Success=1` (the new configuration was loaded and a worker forked)
    /// or `Success=0` (the old workers keep serving the old configuration).
    pub success: bool,
    /// The startup logs of this reload (alerts on failure), trailing
    /// newlines removed.
    pub startup_log: String,
}

impl MasterCli {
    /// A client for the master CLI at `socket`, with the default timeouts.
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Self {
            socket: socket.into(),
            timeout: DEFAULT_COMMAND_TIMEOUT,
            reload_timeout: DEFAULT_RELOAD_TIMEOUT,
        }
    }

    /// Replaces [`DEFAULT_COMMAND_TIMEOUT`] for `show` commands.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Replaces [`DEFAULT_RELOAD_TIMEOUT`] for `reload`.
    pub fn with_reload_timeout(mut self, timeout: Duration) -> Self {
        self.reload_timeout = timeout;
        self
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Reloads HAProxy (`-sf`) and waits for the master's verdict.
    ///
    /// [`SocketError::Busy`] means the reload was not accepted (another one
    /// was running) or its session was cut: retry, then check `show proc`.
    /// [`SocketError::Timeout`] leaves it unknown whether the reload ran.
    pub async fn reload(&self) -> Result<ReloadReply, SocketError> {
        let command = Command::new("reload");
        let reply =
            cli::exchange(&self.socket, Peer::Master, &command, self.reload_timeout).await?;
        let reply = parse_reload(&reply).ok_or_else(|| cli::rejected(&command, &reply))?;
        if !reply.success
            && reply
                .startup_log
                .contains("Another reload is still in progress")
        {
            // HAProxy 3.1+ answers this instead of refusing the connection.
            return Err(SocketError::Busy {
                socket: self.socket.clone(),
                source: std::io::Error::other(reply.startup_log),
            });
        }
        Ok(reply)
    }

    /// The master, its current workers and the old workers still draining.
    pub async fn show_proc(&self) -> Result<ProcTable, SocketError> {
        let command = Command::new("show proc");
        let reply = cli::exchange(&self.socket, Peer::Master, &command, self.timeout).await?;
        ProcTable::parse(&reply).map_err(|reason| {
            if reply.starts_with("#<PID>") {
                cli::unparsable(&command, reason, &reply)
            } else {
                cli::rejected(&command, &reply)
            }
        })
    }

    /// The logs of the latest startup or reload, failed or not.
    pub async fn show_startup_logs(&self) -> Result<String, SocketError> {
        let command = Command::new("show startup-logs");
        let reply = cli::exchange(&self.socket, Peer::Master, &command, self.timeout).await?;
        Ok(cli::text(&reply).to_owned())
    }
}

/// `Success=1\n--\n<logs>`; `None` when the first line is anything else.
fn parse_reload(reply: &str) -> Option<ReloadReply> {
    let (status, rest) = reply.split_once('\n').unwrap_or((reply, ""));
    let success = match status {
        "Success=1" => true,
        "Success=0" => false,
        _ => return None,
    };
    let log = rest
        .strip_prefix("--\n")
        .or_else(|| rest.strip_prefix("--"))
        .unwrap_or(rest);
    Some(ReloadReply {
        success,
        startup_log: cli::text(log).to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reload_replies_split_status_from_logs() {
        let good = "Success=1\n--\n[NOTICE]   (2599) : New worker (3147) forked\n[NOTICE]   (2599) : Loading success.\n\n";
        assert_eq!(
            parse_reload(good),
            Some(ReloadReply {
                success: true,
                startup_log: "[NOTICE]   (2599) : New worker (3147) forked\n[NOTICE]   (2599) : Loading success.".into(),
            })
        );
        let bad = "Success=0\n--\n[ALERT]    (2599) : config : parsing [haproxy.cfg:6] : unknown keyword 'bogus_keyword' in 'defaults' section\n[WARNING]  (2599) : Loading failure!\n\n";
        let bad = parse_reload(bad).unwrap();
        assert!(!bad.success);
        assert!(bad.startup_log.starts_with("[ALERT]"));
        assert!(bad.startup_log.ends_with("Loading failure!"));
    }

    #[test]
    fn reload_status_is_parsed_strictly() {
        for reply in [
            "Permission denied\n\n",
            "Success=2\n--\n",
            "success=1\n--\n",
            "",
        ] {
            assert_eq!(parse_reload(reply), None, "{reply:?}");
        }
        let bare = parse_reload("Success=0\n[ALERT] x\n\n").unwrap();
        assert_eq!(bare.startup_log, "[ALERT] x");
    }
}
