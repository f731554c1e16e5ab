//! One command per UNIX-socket session, shared by the master CLI and the
//! runtime API clients.
//!
//! ```text
//!  Command { line, payload } ──connect──write──(half-close)──read to EOF──► reply text
//!                                 │                                 │
//!                       ECONNREFUSED → Busy                 timeout → Timeout
//! ```
//!
//! How a session ends differs by peer (measured on HAProxy 3.0.11):
//! - the master keeps a non-interactive session open until it reads `quit`
//!   or the client half-closes, so master commands are sent as
//!   `<cmd>;quit\n` followed by a half-close;
//! - a worker closes the session after one command, and a half-close would
//!   interrupt `wait`, so worker sessions keep the write side open.

pub(crate) mod args;

use std::{fmt, io, path::Path, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::UnixStream,
};

use crate::SocketError;

/// Default limit for every master CLI and runtime API round trip except
/// `reload` and `wait`.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(3);

/// Which HAProxy process serves the socket; decides how sessions end and
/// which I/O errors mean "busy".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// The master CLI (`-S`).
    Master,
    /// A worker's stats socket.
    Worker,
}

/// A command line and an optional `<<` payload, which [`fmt::Debug`] and
/// every error leave out (it may hold a private key).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Command {
    line: String,
    payload: Option<String>,
}

impl Command {
    /// A command without payload, e.g. `show info`.
    pub(crate) fn new(line: impl Into<String>) -> Self {
        Self {
            line: line.into(),
            payload: None,
        }
    }

    /// A `<line> <<` command; `lines` must be non-empty lines without `\n`.
    pub(crate) fn with_payload<'a>(
        line: impl Into<String>,
        lines: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut payload = String::new();
        for line in lines {
            payload.push_str(line);
            payload.push('\n');
        }
        Self {
            line: line.into(),
            payload: Some(payload),
        }
    }

    /// The command as named in errors: the line, plus ` <<` for payloads.
    pub(crate) fn display(&self) -> String {
        match self.payload {
            Some(_) => format!("{} <<", self.line),
            None => self.line.clone(),
        }
    }

    /// The bytes sent to `peer`. A payload always ends with an empty line:
    /// without it HAProxy silently never runs the command.
    pub(crate) fn wire(&self, peer: Peer) -> String {
        match (&self.payload, peer) {
            (Some(payload), _) => format!("{} <<\n{payload}\n", self.line),
            (None, Peer::Master) => format!("{};quit\n", self.line),
            (None, Peer::Worker) => format!("{}\n", self.line),
        }
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("line", &self.line)
            .field("payload_bytes", &self.payload.as_ref().map(String::len))
            .finish()
    }
}

/// Sends `command` to the socket at `socket` and returns the whole reply.
///
/// An empty reply is an error: every HAProxy CLI command answers at least
/// a newline, so zero bytes mean the session was cut (by a reload on the
/// master, or by an unterminated payload on a worker).
pub(crate) async fn exchange(
    socket: &Path,
    peer: Peer,
    command: &Command,
    timeout: Duration,
) -> Result<String, SocketError> {
    let session = run_session(socket, peer, command);
    let reply =
        tokio::time::timeout(timeout, session)
            .await
            .map_err(|_| SocketError::Timeout {
                socket: socket.to_owned(),
                command: command.display(),
                timeout,
            })??;
    if !reply.is_empty() {
        return Ok(reply);
    }
    Err(match peer {
        Peer::Master => SocketError::Busy {
            socket: socket.to_owned(),
            source: io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the master closed the session without a reply",
            ),
        },
        Peer::Worker => SocketError::NoReply {
            socket: socket.to_owned(),
            command: command.display(),
        },
    })
}

async fn run_session(socket: &Path, peer: Peer, command: &Command) -> Result<String, SocketError> {
    let mut stream = UnixStream::connect(socket)
        .await
        .map_err(|source| connect_error(socket, source))?;
    let io_error = |source| io_error(socket, peer, command, source);
    stream
        .write_all(command.wire(peer).as_bytes())
        .await
        .map_err(io_error)?;
    if peer == Peer::Master {
        stream.shutdown().await.map_err(io_error)?;
    }
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).await.map_err(io_error)?;
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

fn connect_error(socket: &Path, source: io::Error) -> SocketError {
    let socket = socket.to_owned();
    match source.kind() {
        io::ErrorKind::ConnectionRefused => SocketError::Busy { socket, source },
        io::ErrorKind::PermissionDenied => SocketError::Denied { socket, source },
        _ => SocketError::Connect { socket, source },
    }
}

fn io_error(socket: &Path, peer: Peer, command: &Command, source: io::Error) -> SocketError {
    let socket = socket.to_owned();
    let cut = matches!(
        source.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
    );
    if peer == Peer::Master && cut {
        // "A reload will close all connections to the master CLI."
        return SocketError::Busy { socket, source };
    }
    SocketError::Io {
        socket,
        command: command.display(),
        source,
    }
}

/// The reply without its trailing newlines (HAProxy ends replies with an
/// empty line).
pub(crate) fn text(reply: &str) -> &str {
    reply.trim_end_matches('\n')
}

/// [`SocketError::Rejected`] for `command` and `reply`.
pub(crate) fn rejected(command: &Command, reply: &str) -> SocketError {
    SocketError::Rejected {
        command: command.display(),
        reply: text(reply).to_owned(),
    }
}

/// [`SocketError::Unparsable`] for `command` and `reply`.
pub(crate) fn unparsable(command: &Command, reason: impl Into<String>, reply: &str) -> SocketError {
    SocketError::Unparsable {
        command: command.display(),
        reason: reason.into(),
        reply: text(reply).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_end_with_an_empty_line_and_stay_out_of_debug() {
        let command = Command::with_payload("set ssl cert a.pem", ["SECRET-1", "SECRET-2"]);
        assert_eq!(
            command.wire(Peer::Worker),
            "set ssl cert a.pem <<\nSECRET-1\nSECRET-2\n\n"
        );
        assert_eq!(command.display(), "set ssl cert a.pem <<");
        let debug = format!("{command:?}");
        assert!(!debug.contains("SECRET"), "{debug}");
    }

    #[test]
    fn master_commands_end_the_session_with_quit() {
        assert_eq!(
            Command::new("show proc").wire(Peer::Master),
            "show proc;quit\n"
        );
        assert_eq!(Command::new("show info").wire(Peer::Worker), "show info\n");
    }

    #[test]
    fn a_socket_that_refuses_access_is_denied_not_missing() {
        let socket = Path::new("/run/admin.sock");
        let denied = connect_error(socket, io::ErrorKind::PermissionDenied.into());
        assert!(denied.is_denied(), "{denied:?}");
        assert_eq!(denied.metric_label(), "denied");
        assert!(denied.to_string().contains("permission denied"), "{denied}");
        let missing = connect_error(socket, io::ErrorKind::NotFound.into());
        assert!(
            matches!(missing, SocketError::Connect { .. }),
            "{missing:?}"
        );
    }
}
