//! The error type of the master CLI and runtime API clients.

use std::{io, path::PathBuf, time::Duration};

/// Why a master CLI or runtime API call did not do what was asked.
///
/// Certificate and key payloads never appear in these errors: `command` is
/// always the command line without its payload.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// Nobody accepted the connection, or the session was cut, while the
    /// master re-executes itself for a reload. Not a failure: retry later,
    /// then look at `show proc`.
    #[error("haproxy socket {} is busy (a reload is probably under way)", socket.display())]
    Busy {
        /// The socket that refused or dropped the session.
        socket: PathBuf,
        /// What the operating system, or HAProxy, said.
        #[source]
        source: io::Error,
    },

    /// The socket exists and this process may not use it: its mode or owner
    /// lets other users in only. A reload leaves it as it is.
    #[error(
        "haproxy socket {} refuses this process access (permission denied): give hawser's user read and write access to it",
        socket.display()
    )]
    Denied {
        /// The socket path.
        socket: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },

    /// The socket could not be reached for another reason (e.g. missing).
    #[error("failed to connect to haproxy socket {}", socket.display())]
    Connect {
        /// The socket path.
        socket: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },

    /// Writing the command or reading the reply failed.
    #[error("failed to exchange `{command}` with haproxy socket {}", socket.display())]
    Io {
        /// The socket path.
        socket: PathBuf,
        /// The command line, without payload.
        command: String,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },

    /// No complete reply arrived in time; the command may or may not have run.
    #[error("haproxy socket {} did not answer `{command}` within {timeout:?}", socket.display())]
    Timeout {
        /// The socket path.
        socket: PathBuf,
        /// The command line, without payload.
        command: String,
        /// The limit that was exceeded.
        timeout: Duration,
    },

    /// HAProxy closed the session without a single byte of reply, which it
    /// does when a `<<` payload is cut short.
    #[error("haproxy socket {} closed the session without answering `{command}`", socket.display())]
    NoReply {
        /// The socket path.
        socket: PathBuf,
        /// The command line, without payload.
        command: String,
    },

    /// HAProxy answered something other than the command's success text.
    #[error("haproxy rejected `{command}`: {reply}")]
    Rejected {
        /// The command line, without payload.
        command: String,
        /// HAProxy's words, trailing newlines removed.
        reply: String,
    },

    /// A listing (`show proc`, `show map`, ...) did not have the expected shape.
    #[error("failed to parse the reply to `{command}`: {reason}: {reply:?}")]
    Unparsable {
        /// The command line.
        command: String,
        /// What did not match.
        reason: String,
        /// HAProxy's words, trailing newlines removed.
        reply: String,
    },

    /// An argument would break the command line (whitespace, `;`, control
    /// characters) and was not sent.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidArgument {
        /// Which argument, e.g. `backend name`.
        what: &'static str,
        /// The offending value (never a certificate or key).
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// The command with its payload is larger than HAProxy's CLI buffer
    /// (`tune.bufsize`); HAProxy would reject it or reset the session.
    #[error("`{command}` needs {size} bytes, more than the {limit}-byte command limit")]
    PayloadTooLarge {
        /// The command line, without payload.
        command: String,
        /// The size of the command with its payload.
        size: usize,
        /// The configured limit.
        limit: usize,
    },

    /// A prepared map version does not hold the entries sent to it, so it
    /// was not committed.
    #[error(
        "map {map} version {version} holds {found} entries instead of {expected}; it was not committed"
    )]
    MapCountMismatch {
        /// The map file or `#id`.
        map: String,
        /// The prepared version.
        version: u32,
        /// How many entries were sent.
        expected: usize,
        /// How many `show map @version` listed.
        found: usize,
    },

    /// A certificate update failed and so did the abort that should have
    /// closed its transaction: every later certificate update will be refused
    /// until the transaction is aborted.
    #[error(
        "ssl transaction for {path} may be left open: update failed ({failure}) and abort failed"
    )]
    TransactionLeftOpen {
        /// The certificate whose transaction may be open.
        path: String,
        /// Why the update failed.
        failure: Box<SocketError>,
        /// Why the abort failed.
        #[source]
        abort: Box<SocketError>,
    },
}

impl SocketError {
    /// Whether the socket took the command and said nothing (in time): it
    /// stalls. Unlike a socket that is not there (refused, busy), which a
    /// reload brings back, a stalled one is the same after a reload.
    pub fn is_unanswered(&self) -> bool {
        matches!(self, Self::Timeout { .. } | Self::NoReply { .. })
    }

    /// Whether the socket refused this process access: like a stalled
    /// socket, it is the same after a reload, which is verified through it.
    pub fn is_denied(&self) -> bool {
        matches!(self, Self::Denied { .. })
    }

    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Busy { .. } => "busy",
            Self::Denied { .. } => "denied",
            Self::Connect { .. } => "connect",
            Self::Io { .. } => "io",
            Self::Timeout { .. } => "timeout",
            Self::NoReply { .. } => "no_reply",
            Self::Rejected { .. } => "rejected",
            Self::Unparsable { .. } => "unparsable",
            Self::InvalidArgument { .. } => "invalid_argument",
            Self::PayloadTooLarge { .. } => "payload_too_large",
            Self::MapCountMismatch { .. } => "map_count_mismatch",
            Self::TransactionLeftOpen { .. } => "ssl_transaction_left_open",
        }
    }

    /// True for [`SocketError::Busy`]: retry after a short backoff.
    pub fn is_busy(&self) -> bool {
        matches!(self, Self::Busy { .. })
    }
}
