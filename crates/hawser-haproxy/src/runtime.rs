//! The runtime API client: changes that need no reload, sent to a worker's
//! stats socket at `level admin`.
//!
//! ```text
//!  RuntimeApi ──one command per session──► worker stats socket
//!     ├─ servers: add / enable / set addr|weight|state / wait srv-removable / del
//!     │           (add, enable, weight and state also batched: one session for many)
//!     ├─ maps:    prepare → add @v payload → show @v count check → commit
//!     ├─ ssl:     set → commit, abort on any failure (one process-wide transaction)
//!     └─ show info, show servers state, show stat, show table (traffic counters)
//! ```
//!
//! Every reply is compared with the exact success text HAProxy 3.0 prints
//! for that command (often an empty line); anything else is
//! [`SocketError::Rejected`] with HAProxy's words. Everything changed here is
//! lost on reload unless the on-disk configuration says the same.

mod batch;
mod maps;
mod servers;
mod servers_state;
mod ssl;
mod ssl_listing;
mod stats;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

pub use batch::CommandBatch;
pub use maps::MapInfo;
pub use servers::{AdminState, WaitOutcome};
pub use servers_state::ServerState;
pub use ssl_listing::{CrtListEntry, SslCertDetails, SslCertList};
pub use stats::{StatRow, Stats, TableEntry};
use tokio::sync::Mutex;

use crate::{
    DEFAULT_COMMAND_TIMEOUT, SocketError,
    cli::{self, Command, Peer},
};

/// Default cap on one command with its payload. HAProxy's CLI reads a
/// command into one buffer (`tune.bufsize`, 16384 bytes by default) and
/// answers `The command is too big for the buffer size` or resets the
/// session beyond it; map payloads are split to stay below this.
pub const DEFAULT_MAX_COMMAND_BYTES: usize = 15 * 1024;

/// A client for a worker's stats socket (`stats socket <path> level admin`).
///
/// Cheap to clone; clones share the lock that serializes SSL transactions.
#[derive(Debug, Clone)]
pub struct RuntimeApi {
    socket: PathBuf,
    timeout: Duration,
    max_command_bytes: usize,
    ssl_transaction: Arc<Mutex<()>>,
}

impl RuntimeApi {
    /// A client for the stats socket at `socket`, with default limits.
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Self {
            socket: socket.into(),
            timeout: DEFAULT_COMMAND_TIMEOUT,
            max_command_bytes: DEFAULT_MAX_COMMAND_BYTES,
            ssl_transaction: Arc::new(Mutex::new(())),
        }
    }

    /// Replaces [`DEFAULT_COMMAND_TIMEOUT`] for every command.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Replaces [`DEFAULT_MAX_COMMAND_BYTES`]; raise it together with
    /// HAProxy's `tune.bufsize`.
    pub fn with_max_command_bytes(mut self, limit: usize) -> Self {
        self.max_command_bytes = limit;
        self
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// `show info`: `Pid`, `Uptime_sec`, `CurrConns`, ... as text.
    pub async fn show_info(&self) -> Result<BTreeMap<String, String>, SocketError> {
        let command = Command::new("show info");
        let reply = self.send(&command).await?;
        let mut info = BTreeMap::new();
        for line in cli::text(&reply).lines() {
            let Some((key, value)) = line.split_once(':') else {
                return Err(cli::rejected(&command, &reply));
            };
            info.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        if !info.contains_key("Pid") {
            return Err(cli::rejected(&command, &reply));
        }
        Ok(info)
    }

    /// Sends `command` with the client's timeout.
    async fn send(&self, command: &Command) -> Result<String, SocketError> {
        self.send_within(command, self.timeout).await
    }

    /// Sends `command`, giving up after `timeout`.
    async fn send_within(
        &self,
        command: &Command,
        timeout: Duration,
    ) -> Result<String, SocketError> {
        let size = command.wire(Peer::Worker).len();
        if size > self.max_command_bytes {
            return Err(SocketError::PayloadTooLarge {
                command: command.display(),
                size,
                limit: self.max_command_bytes,
            });
        }
        cli::exchange(&self.socket, Peer::Worker, command, timeout).await
    }

    /// Sends `command` and accepts only an empty reply, which is how many
    /// commands (`set server`, `enable server`, `set map`, ...) say yes.
    async fn expect_empty(&self, command: &Command) -> Result<(), SocketError> {
        self.expect_reply(command, str::is_empty).await.map(drop)
    }

    /// Sends `command` and returns the reply text when `accept` likes it.
    async fn expect_reply(
        &self,
        command: &Command,
        accept: impl FnOnce(&str) -> bool,
    ) -> Result<String, SocketError> {
        let reply = self.send(command).await?;
        let text = cli::text(&reply);
        if accept(text) {
            Ok(text.to_owned())
        } else {
            Err(cli::rejected(command, &reply))
        }
    }
}

/// True when the last line of `text` is `Success!` (after progress output).
fn ends_with_success(text: &str) -> bool {
    text.lines().last() == Some("Success!")
}
