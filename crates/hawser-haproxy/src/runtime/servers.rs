//! Server commands: dynamic servers, address, weight and admin state, and
//! the removal protocol (`maint` → `wait srv-removable` → `del server`).

use std::{net::IpAddr, time::Duration};

use super::{RuntimeApi, servers_state};
use crate::{
    ServerState, SocketError,
    cli::{self, Command, args},
};

/// The admin state `set server <b>/<s> state` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdminState {
    /// In load balancing (the same as `enable server`).
    Ready,
    /// Out of load balancing; checks and persistent connections continue.
    Drain,
    /// No traffic and no checks (the same as `disable server`).
    Maint,
}

impl AdminState {
    fn keyword(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Drain => "drain",
            Self::Maint => "maint",
        }
    }
}

/// How `wait <delay> srv-removable` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitOutcome {
    /// `Done.`: the server is in maintenance with nothing attached.
    Removable,
    /// `Wait delay expired.`: connections are still attached.
    DelayExpired,
}

impl RuntimeApi {
    /// `add server <backend>/<server> <addr>:<port> [keywords]`.
    ///
    /// The server starts in maintenance: call [`RuntimeApi::enable_server`]
    /// next. The backend must use a dynamic load-balancing algorithm, and
    /// `default-server` settings are not inherited, so pass them in
    /// `extra_keywords` (each one CLI word, e.g. `["weight", "5", "check"]`).
    pub async fn add_server(
        &self,
        backend: &str,
        server: &str,
        addr: IpAddr,
        port: u16,
        extra_keywords: &[&str],
    ) -> Result<(), SocketError> {
        let line = add_server_line(backend, server, addr, port, extra_keywords)?;
        self.expect_reply(&Command::new(line), |text| text == SERVER_ADDED)
            .await
            .map(drop)
    }

    /// `del server <backend>/<server>`; the server must be in maintenance
    /// and unused (see [`RuntimeApi::wait_srv_removable`]).
    pub async fn del_server(&self, backend: &str, server: &str) -> Result<(), SocketError> {
        let command = Command::new(format!("del server {}", server_ref(backend, server)?));
        self.expect_reply(&command, |text| text == "Server deleted.")
            .await
            .map(drop)
    }

    /// `set server <backend>/<server> addr <addr> port <port>`.
    ///
    /// HAProxy 3.0 applies the new address asynchronously after it has
    /// answered: `show servers state` may still list the old one for a
    /// fraction of a millisecond (measured: 4 to 9 reads in 200 right after
    /// the reply). Read it back until it matches before dumping a
    /// `server-state-file`, or the reload restores the old address.
    pub async fn set_server_addr(
        &self,
        backend: &str,
        server: &str,
        addr: IpAddr,
        port: u16,
    ) -> Result<(), SocketError> {
        let command = Command::new(format!(
            "set server {} addr {addr} port {port}",
            server_ref(backend, server)?
        ));
        // `IP changed from '..' to '..', port changed from '..' to '..' by
        // 'stats socket command'`, either half alone, or `nothing changed`.
        self.expect_reply(&command, |text| {
            text == "nothing changed"
                || (text.contains("changed from") && text.ends_with("by 'stats socket command'"))
        })
        .await
        .map(drop)
    }

    /// `set server <backend>/<server> weight <weight>` (0 to 256).
    pub async fn set_server_weight(
        &self,
        backend: &str,
        server: &str,
        weight: u16,
    ) -> Result<(), SocketError> {
        let command = Command::new(weight_line(backend, server, weight)?);
        self.expect_empty(&command).await
    }

    /// `set server <backend>/<server> state ready|drain|maint`.
    pub async fn set_server_state(
        &self,
        backend: &str,
        server: &str,
        state: AdminState,
    ) -> Result<(), SocketError> {
        let command = Command::new(state_line(backend, server, state)?);
        self.expect_empty(&command).await
    }

    /// `enable server <backend>/<server>`: leave maintenance.
    pub async fn enable_server(&self, backend: &str, server: &str) -> Result<(), SocketError> {
        let command = Command::new(enable_line(backend, server)?);
        self.expect_empty(&command).await
    }

    /// `shutdown sessions server <backend>/<server>`: kill its streams, for
    /// when a drain budget ran out.
    pub async fn shutdown_sessions(&self, backend: &str, server: &str) -> Result<(), SocketError> {
        let command = Command::new(format!(
            "shutdown sessions server {}",
            server_ref(backend, server)?
        ));
        self.expect_empty(&command).await
    }

    /// `wait <delay> srv-removable <backend>/<server>`: waits up to `delay`
    /// for the server to be in maintenance with nothing attached.
    ///
    /// `Failed.` (not in maintenance, or no such server) is
    /// [`SocketError::Rejected`]. The session's write side stays open: a
    /// half-close makes HAProxy answer `Interrupted.` at once.
    pub async fn wait_srv_removable(
        &self,
        backend: &str,
        server: &str,
        delay: Duration,
    ) -> Result<WaitOutcome, SocketError> {
        let command = Command::new(format!(
            "wait {}ms srv-removable {}",
            // `wait 0ms` is refused with `Invalid duration.`
            delay.as_millis().max(1),
            server_ref(backend, server)?
        ));
        let reply = self.send_within(&command, delay + self.timeout).await?;
        match cli::text(&reply) {
            "Done." => Ok(WaitOutcome::Removable),
            "Wait delay expired." => Ok(WaitOutcome::DelayExpired),
            _ => Err(cli::rejected(&command, &reply)),
        }
    }

    /// `show servers state [<backend>]`, parsed by the column names of its
    /// header.
    pub async fn show_servers_state(
        &self,
        backend: Option<&str>,
    ) -> Result<Vec<ServerState>, SocketError> {
        let command = match backend {
            Some(backend) => Command::new(format!(
                "show servers state {}",
                args::word("backend name", backend)?
            )),
            None => Command::new("show servers state"),
        };
        let reply = self.send(&command).await?;
        servers_state::parse_reply(&command, &reply)
    }

    /// `show servers state` as HAProxy printed it (format version line,
    /// header, one line per server, newline-terminated): the contents of a
    /// `server-state-file`.
    pub async fn show_servers_state_raw(&self) -> Result<String, SocketError> {
        let command = Command::new("show servers state");
        let reply = self.send(&command).await?;
        servers_state::parse_reply(&command, &reply)?;
        Ok(format!("{}\n", cli::text(&reply)))
    }
}

/// What `add server` answers when the server was added.
pub(super) const SERVER_ADDED: &str = "New server registered.";

/// `add server <backend>/<server> <addr>:<port> [keywords]`, each keyword
/// checked to be one CLI word.
pub(super) fn add_server_line(
    backend: &str,
    server: &str,
    addr: IpAddr,
    port: u16,
    extra_keywords: &[&str],
) -> Result<String, SocketError> {
    let mut line = format!(
        "add server {} {}",
        server_ref(backend, server)?,
        socket_addr(addr, port)
    );
    for keyword in extra_keywords {
        line.push(' ');
        line.push_str(args::word("server keyword", keyword)?);
    }
    Ok(line)
}

/// `enable server <backend>/<server>`.
pub(super) fn enable_line(backend: &str, server: &str) -> Result<String, SocketError> {
    Ok(format!("enable server {}", server_ref(backend, server)?))
}

/// `set server <backend>/<server> state ready|drain|maint`.
pub(super) fn state_line(
    backend: &str,
    server: &str,
    state: AdminState,
) -> Result<String, SocketError> {
    Ok(format!(
        "set server {} state {}",
        server_ref(backend, server)?,
        state.keyword()
    ))
}

/// `set server <backend>/<server> weight <weight>`.
pub(super) fn weight_line(backend: &str, server: &str, weight: u16) -> Result<String, SocketError> {
    Ok(format!(
        "set server {} weight {weight}",
        server_ref(backend, server)?
    ))
}

/// `<backend>/<server>`, both checked to be single CLI words.
fn server_ref(backend: &str, server: &str) -> Result<String, SocketError> {
    let backend = args::word("backend name", backend)?;
    let server = args::word("server name", server)?;
    Ok(format!("{backend}/{server}"))
}

/// `1.2.3.4:80` or `[::1]:80`.
fn socket_addr(addr: IpAddr, port: u16) -> String {
    match addr {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}
