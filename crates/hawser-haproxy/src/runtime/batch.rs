//! Commands sent together: one session, the commands joined by `;`, so a
//! change's servers (or one map entry in both copies of a twinned map) cost
//! one round trip to a busy worker instead of one per command.
//!
//! ```text
//!  add server be/a 10.0.0.1:80 weight 1;enable server be/a;set server be/b state maint
//!    ──► "New server registered.\n\n" + "\n" + "\n"
//! ```
//!
//! Measured on HAProxy 3.0.11: a worker runs the `;`-separated commands of
//! one line in order, carries on after one fails, and answers each as it
//! would alone, one after another: its text and an empty line, or a lone
//! newline for a command that says nothing (`enable server`, `set server`,
//! `add map`, `set map`, `del map`).
//! So a batch did what it asked exactly when its reply is the success
//! replies end to end; otherwise the first command whose success reply is
//! not where it should be is the one named, with HAProxy's words. Every
//! argument is a checked CLI word (no `;`, no `\`), and map keys and values
//! have theirs escaped, so no name can split a command or start another.

use std::net::IpAddr;

use super::RuntimeApi;
use super::maps::map_line;
use super::servers::{
    AdminState, SERVER_ADDED, add_server_line, enable_line, state_line, weight_line,
};
use crate::{
    SocketError,
    cli::{self, Command},
};

/// Commands to send in as few sessions as the command size limit
/// allows ([`RuntimeApi::run_batch`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommandBatch {
    commands: Vec<Batched>,
}

/// One command of a batch and the reply text it gives when it succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Batched {
    line: String,
    success: &'static str,
}

impl CommandBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many commands the batch holds.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether the batch holds no command.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// `add server`, as [`RuntimeApi::add_server`] sends it.
    pub fn add_server(
        &mut self,
        backend: &str,
        server: &str,
        addr: IpAddr,
        port: u16,
        extra_keywords: &[&str],
    ) -> Result<(), SocketError> {
        let line = add_server_line(backend, server, addr, port, extra_keywords)?;
        self.push(line, SERVER_ADDED);
        Ok(())
    }

    /// `enable server`, as [`RuntimeApi::enable_server`] sends it.
    pub fn enable_server(&mut self, backend: &str, server: &str) -> Result<(), SocketError> {
        self.push(enable_line(backend, server)?, "");
        Ok(())
    }

    /// `set server ... state`, as [`RuntimeApi::set_server_state`] sends it.
    pub fn set_server_state(
        &mut self,
        backend: &str,
        server: &str,
        state: AdminState,
    ) -> Result<(), SocketError> {
        self.push(state_line(backend, server, state)?, "");
        Ok(())
    }

    /// `set server ... weight`, as [`RuntimeApi::set_server_weight`] sends
    /// it.
    pub fn set_server_weight(
        &mut self,
        backend: &str,
        server: &str,
        weight: u16,
    ) -> Result<(), SocketError> {
        self.push(weight_line(backend, server, weight)?, "");
        Ok(())
    }

    /// `add map`, as [`RuntimeApi::add_map`] sends it.
    pub fn add_map(&mut self, map: &str, key: &str, value: &str) -> Result<(), SocketError> {
        self.push(map_line("add", map, key, Some(value))?, "");
        Ok(())
    }

    /// `set map`, as [`RuntimeApi::set_map`] sends it.
    pub fn set_map(&mut self, map: &str, key: &str, value: &str) -> Result<(), SocketError> {
        self.push(map_line("set", map, key, Some(value))?, "");
        Ok(())
    }

    /// `del map`, as [`RuntimeApi::del_map`] sends it.
    pub fn del_map(&mut self, map: &str, key: &str) -> Result<(), SocketError> {
        self.push(map_line("del", map, key, None)?, "");
        Ok(())
    }

    fn push(&mut self, line: String, success: &'static str) {
        self.commands.push(Batched { line, success });
    }

    /// The commands cut into sessions whose line (with its newline) stays
    /// within `limit` bytes; a command longer than that alone is a session
    /// of its own, which the size check then refuses.
    fn sessions(&self, limit: usize) -> Vec<&[Batched]> {
        let mut sessions = Vec::new();
        let (mut start, mut size) = (0, 0);
        for (index, command) in self.commands.iter().enumerate() {
            // The `;` before it, or the newline after the last.
            let grown = size + command.line.len() + 1;
            if index > start && grown > limit {
                sessions.push(&self.commands[start..index]);
                (start, size) = (index, command.line.len() + 1);
            } else {
                size = grown;
            }
        }
        if start < self.commands.len() {
            sessions.push(&self.commands[start..]);
        }
        sessions
    }
}

impl RuntimeApi {
    /// Sends `batch`, as few commands per session as the command size limit
    /// allows, in order; stops at the first session whose reply is not
    /// every success reply, naming the first command that failed. The
    /// commands after a failed one in its session ran too (HAProxy carries
    /// on), so what a failed batch leaves is for the caller to put right.
    pub async fn run_batch(&self, batch: &CommandBatch) -> Result<(), SocketError> {
        for session in batch.sessions(self.max_command_bytes) {
            let lines: Vec<&str> = session.iter().map(|c| c.line.as_str()).collect();
            let command = Command::new(lines.join(";"));
            let reply = self.send(&command).await?;
            replies_succeeded(session, &command, &reply)?;
        }
        Ok(())
    }
}

/// Whether `reply` is the success replies of `session` end to end;
/// otherwise the error names the first command whose reply differs.
fn replies_succeeded(session: &[Batched], sent: &Command, reply: &str) -> Result<(), SocketError> {
    let mut rest = reply;
    for command in session {
        let answered = match command.success {
            "" => "\n".to_string(),
            text => format!("{text}\n\n"),
        };
        match rest.strip_prefix(&answered) {
            Some(after) => rest = after,
            None => {
                let said = rest.split("\n\n").next().unwrap_or_default();
                return Err(cli::rejected(&Command::new(&command.line), said));
            }
        }
    }
    match rest {
        "" => Ok(()),
        _ => Err(cli::rejected(sent, reply)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Peer;

    /// The wire size of one session of `lines`.
    fn wire_len(lines: &[&str]) -> usize {
        Command::new(lines.join(";")).wire(Peer::Worker).len()
    }

    fn batch_of(lines: &[(&str, &'static str)]) -> CommandBatch {
        let mut batch = CommandBatch::new();
        for (line, success) in lines {
            batch.push(line.to_string(), success);
        }
        batch
    }

    #[test]
    fn a_reply_of_every_success_in_order_is_success() {
        let batch = batch_of(&[
            ("add server be/a 10.0.0.1:80", SERVER_ADDED),
            ("enable server be/a", ""),
            ("set server be/b state maint", ""),
        ]);
        let sent = Command::new("batch");
        let ok = "New server registered.\n\n\n\n";
        assert!(replies_succeeded(&batch.commands, &sent, ok).is_ok());
        // Measured on HAProxy 3.0.11: the add failed, the enable of the
        // server of that name went through, and the last had no server.
        let failed =
            "Already exists a server with the same name in backend.\n\n\nNo such server.\n\n";
        let error = replies_succeeded(&batch.commands, &sent, failed).unwrap_err();
        let SocketError::Rejected { command, reply } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(command, "add server be/a 10.0.0.1:80");
        assert_eq!(
            reply,
            "Already exists a server with the same name in backend."
        );
        // A later command failing is the one named.
        let late = "New server registered.\n\n\nNo such server.\n\n";
        let error = replies_succeeded(&batch.commands, &sent, late).unwrap_err();
        assert!(
            matches!(&error, SocketError::Rejected { command, reply }
                if command == "set server be/b state maint" && reply == "No such server."),
            "{error:?}"
        );
        // Anything more than the success replies is no success either.
        let more = "New server registered.\n\n\n\nsurprise\n\n";
        assert!(replies_succeeded(&batch.commands, &sent, more).is_err());
        let less = "New server registered.\n\n\n";
        assert!(replies_succeeded(&batch.commands, &sent, less).is_err());
    }

    #[test]
    fn sessions_stay_within_the_size_limit_and_keep_the_order() {
        let lines: Vec<String> = (0..50)
            .map(|i| format!("set server be/server-{i} state maint"))
            .collect();
        let mut batch = CommandBatch::new();
        for line in &lines {
            batch.push(line.clone(), "");
        }
        for limit in [40, 100, 333, 15 * 1024] {
            let sessions = batch.sessions(limit);
            let flat: Vec<&str> = sessions
                .iter()
                .flat_map(|s| s.iter().map(|c| c.line.as_str()))
                .collect();
            assert_eq!(flat, lines.iter().map(String::as_str).collect::<Vec<_>>());
            for session in &sessions {
                let session: Vec<&str> = session.iter().map(|c| c.line.as_str()).collect();
                let size = wire_len(&session);
                assert!(size <= limit || session.len() == 1, "{size} > {limit}");
            }
            if limit == 15 * 1024 {
                assert_eq!(sessions.len(), 1);
            }
        }
    }

    #[test]
    fn names_that_could_start_another_command_are_refused() {
        let mut batch = CommandBatch::new();
        let error = batch.enable_server("be", "a;del server be/b").unwrap_err();
        assert!(
            matches!(error, SocketError::InvalidArgument { .. }),
            "{error:?}"
        );
        let addr = IpAddr::from([10, 0, 0, 1]);
        let error = batch
            .add_server("be", "a", addr, 80, &["weight", "1;shutdown"])
            .unwrap_err();
        assert!(
            matches!(error, SocketError::InvalidArgument { .. }),
            "{error:?}"
        );
        assert!(batch.is_empty());
    }
}
