//! Carrying out runtime operations through HAProxy's runtime API.
//!
//! Certificate contents and map entries come from the desired version,
//! whose configuration the config policy judged before any operation runs;
//! `current` moves to it once it is staged and `haproxy -c` passed on it
//! (see `agent/runtime_first.rs`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use hawser_haproxy::{AdminState, CommandBatch, RuntimeApi, SocketError, WaitOutcome};
use hawser_plan::{FileSet, LIVE_TWINS_MAP_PATH, Plan, ServerPlan, ServerState};

use crate::diff::{MapEdit, RuntimeOp, TwinStep, twin_steps};

/// How long a removed server may keep its connections before they are cut.
const DRAIN_BUDGET: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error("{op}: {source}")]
    Socket {
        op: String,
        #[source]
        source: SocketError,
    },
    #[error("{op}: {reason}")]
    Input { op: String, reason: String },
}

impl OpError {
    /// Whether HAProxy's runtime API took the command and did not answer
    /// (see [`SocketError::is_unanswered`]).
    pub fn is_unanswered(&self) -> bool {
        matches!(self, OpError::Socket { source, .. } if source.is_unanswered())
    }

    /// Whether HAProxy's runtime API refuses this process access
    /// (see [`SocketError::is_denied`]).
    pub fn is_denied(&self) -> bool {
        matches!(self, OpError::Socket { source, .. } if source.is_denied())
    }
}

/// Which copy of each twinned map requests read, as this agent last read
/// it (`show map` of `live_twins.map`) or set it, so that a route change
/// does not ask again: that is a round trip to a busy worker on the way of
/// every change. Forgotten on anything that may have changed it otherwise:
/// a reload or restart (the new worker reads the file), a drift repair, a
/// command that failed. Were it ever wrong, the edits of a change would be
/// made in the copy being read, one entry at a time, and both copies would
/// still end whole and equal.
#[derive(Debug, Default)]
pub struct LiveCopies(Option<BTreeMap<String, String>>);

impl LiveCopies {
    pub fn forget(&mut self) {
        self.0 = None;
    }

    /// The copy requests read for map `path`, asking HAProxy when not known.
    async fn read(&mut self, api: &RuntimeApi, path: &str) -> Result<Option<String>, SocketError> {
        if self.0.is_none() {
            let shown = api.show_map(LIVE_TWINS_MAP_PATH).await?;
            self.0 = Some(shown.into_iter().collect());
        }
        Ok(self.0.as_ref().and_then(|copies| copies.get(path).cloned()))
    }

    fn set(&mut self, path: &str, copy: &str) {
        if let Some(copies) = &mut self.0 {
            copies.insert(path.to_string(), copy.to_string());
        }
    }
}

/// Runs `ops` in order; stops at the first failure (and then forgets which
/// copies are read: a command may have been taken and not answered).
///
/// Server commands that follow one another (added, enabled, weighed, put in
/// or out of maintenance) go to the worker in one session: each is a round
/// trip to a busy worker on the way of the change. Servers removed one
/// after another all leave traffic first (maintenance, one session too),
/// then each drains and goes: an endpoint swap is seen by traffic once its
/// new server is in and the old ones are out, not after the first old one
/// has drained.
pub async fn execute(
    api: &RuntimeApi,
    ops: &[RuntimeOp],
    files: &FileSet,
    plan: &Plan,
    live: &mut LiveCopies,
) -> Result<(), OpError> {
    let mut rest = ops;
    while let Some(op) = rest.first() {
        let removals = rest.iter().take_while(|op| removal(op)).count();
        let (done, result) = match leading_server_batch(rest) {
            Err(e) => (0, Err(e)),
            Ok((0, _)) if removals > 0 => (removals, remove_servers(api, &rest[..removals]).await),
            Ok((0, _)) => (1, run(api, op, files, plan, live).await),
            Ok((taken, batch)) => (taken, set_servers(api, &rest[..taken], &batch).await),
        };
        if let Err(e) = result {
            live.forget();
            return Err(e);
        }
        rest = &rest[done..];
    }
    Ok(())
}

fn removal(op: &RuntimeOp) -> bool {
    matches!(op, RuntimeOp::RemoveServer { .. })
}

/// The server commands of the operations `ops` begins with, while they are
/// ones whose replies are fixed (servers added, weighed, put in or out of
/// maintenance), and how many operations that is.
fn leading_server_batch(ops: &[RuntimeOp]) -> Result<(usize, CommandBatch), OpError> {
    let mut batch = CommandBatch::new();
    for (taken, op) in ops.iter().enumerate() {
        let added = match op {
            RuntimeOp::AddServer { backend, server } => add_server(&mut batch, backend, server),
            RuntimeOp::SetServerWeight {
                backend,
                server,
                weight,
            } => batch.set_server_weight(backend, server, *weight),
            RuntimeOp::SetServerState {
                backend,
                server,
                state,
            } => batch.set_server_state(backend, server, admin_state(*state)),
            _ => return Ok((taken, batch)),
        };
        added.map_err(|source| socket_error(op, source))?;
    }
    Ok((ops.len(), batch))
}

/// Sends `batch`, the server commands of `ops`, in one session.
async fn set_servers(
    api: &RuntimeApi,
    ops: &[RuntimeOp],
    batch: &CommandBatch,
) -> Result<(), OpError> {
    api.run_batch(batch)
        .await
        .map_err(|source| batch_error(ops, source))
}

/// `removals` (each a [`RuntimeOp::RemoveServer`]): all in maintenance
/// in one session, then each drained and deleted.
async fn remove_servers(api: &RuntimeApi, removals: &[RuntimeOp]) -> Result<(), OpError> {
    let servers = removals.iter().filter_map(|op| match op {
        RuntimeOp::RemoveServer { backend, server } => Some((op, backend, server)),
        _ => None,
    });
    let mut maintenance = CommandBatch::new();
    for (op, backend, server) in servers.clone() {
        maintenance
            .set_server_state(backend, server, AdminState::Maint)
            .map_err(|source| socket_error(op, source))?;
    }
    api.run_batch(&maintenance)
        .await
        .map_err(|source| batch_error(removals, source))?;
    for (op, backend, server) in servers {
        drain_and_delete(api, backend, server)
            .await
            .map_err(|source| socket_error(op, source))?;
    }
    Ok(())
}

/// A failed batch, named by its operations (HAProxy's words in `source`
/// name the command that failed).
fn batch_error(ops: &[RuntimeOp], source: SocketError) -> OpError {
    const SHOWN: usize = 3;
    let mut said: Vec<String> = ops.iter().take(SHOWN).map(describe).collect();
    if ops.len() > SHOWN {
        said.push(format!("{} more", ops.len() - SHOWN));
    }
    OpError::Socket {
        op: said.join(", "),
        source,
    }
}

fn socket_error(op: &RuntimeOp, source: SocketError) -> OpError {
    OpError::Socket {
        op: describe(op),
        source,
    }
}

/// A short description of an operation, for logs and errors.
pub fn describe(op: &RuntimeOp) -> String {
    match op {
        RuntimeOp::AddCertificate { path, .. } => format!("add certificate {path}"),
        RuntimeOp::UpdateCertificate { path } => format!("update certificate {path}"),
        RuntimeOp::AddServer { backend, server } => format!("add server {backend}/{}", server.name),
        RuntimeOp::SetServerAddress {
            backend,
            server,
            address,
            port,
        } => {
            format!("set server {backend}/{server} address {address}:{port}")
        }
        RuntimeOp::SetServerWeight {
            backend,
            server,
            weight,
        } => {
            format!("set server {backend}/{server} weight {weight}")
        }
        RuntimeOp::SetServerState {
            backend,
            server,
            state,
        } => {
            format!("set server {backend}/{server} state {state:?}")
        }
        RuntimeOp::ReplaceMap { path } => format!("replace map {path}"),
        RuntimeOp::EditMap { path, edit } => match edit {
            MapEdit::Add { key, .. } => format!("add map {path} {key}"),
            MapEdit::Set { key, .. } => format!("set map {path} {key}"),
            MapEdit::Del { key } => format!("del map {path} {key}"),
        },
        RuntimeOp::EditTwinMap { path, edits, .. } => {
            const SHOWN: usize = 3;
            let mut said: Vec<String> = edits.iter().take(SHOWN).map(describe_edit).collect();
            if edits.len() > SHOWN {
                said.push(format!("{} more", edits.len() - SHOWN));
            }
            format!("edit map {path} and its twin: {}", said.join("; "))
        }
        RuntimeOp::RemoveServer { backend, server } => format!("remove server {backend}/{server}"),
        RuntimeOp::RemoveCertificate { path, .. } => format!("remove certificate {path}"),
    }
}

async fn run(
    api: &RuntimeApi,
    op: &RuntimeOp,
    files: &FileSet,
    plan: &Plan,
    live: &mut LiveCopies,
) -> Result<(), OpError> {
    let socket = |source| socket_error(op, source);
    if let RuntimeOp::ReplaceMap { path } | RuntimeOp::EditMap { path, .. } = op
        && path == LIVE_TWINS_MAP_PATH
    {
        // Which copies are read is changed by the map itself.
        live.forget();
    }
    match op {
        RuntimeOp::AddCertificate {
            path,
            crt_list,
            sni,
        } => {
            let pem = pem(op, files, path)?;
            api.new_ssl_cert(path).await.map_err(socket)?;
            api.update_ssl_cert(path, pem).await.map_err(socket)?;
            let sni: Vec<&str> = sni.iter().map(String::as_str).collect();
            api.add_ssl_crt_list(crt_list, path, &sni)
                .await
                .map_err(socket)
        }
        RuntimeOp::UpdateCertificate { path } => {
            let pem = pem(op, files, path)?;
            api.update_ssl_cert(path, pem).await.map_err(socket)
        }
        RuntimeOp::AddServer { .. }
        | RuntimeOp::SetServerWeight { .. }
        | RuntimeOp::SetServerState { .. } => {
            let ops = std::slice::from_ref(op);
            let (_, batch) = leading_server_batch(ops)?;
            set_servers(api, ops, &batch).await
        }
        RuntimeOp::SetServerAddress {
            backend,
            server,
            address,
            port,
        } => {
            let ip = ip(op, address)?;
            api.set_server_addr(backend, server, ip, *port)
                .await
                .map_err(socket)
        }
        RuntimeOp::ReplaceMap { path } => {
            let map = plan.map_at(path).ok_or_else(|| OpError::Input {
                op: describe(op),
                reason: "the plan has no such map".to_string(),
            })?;
            let entries: Vec<(&str, &str)> =
                map.entries.iter().map(|e| (&*e.key, &*e.value)).collect();
            api.replace_map(path, &entries)
                .await
                .map(|_| ())
                .map_err(socket)
        }
        RuntimeOp::EditMap { path, edit } => edit_map(api, path, edit).await.map_err(socket),
        RuntimeOp::EditTwinMap { path, twin, edits } => {
            let read = live.read(api, path).await.map_err(socket)?;
            let steps =
                twin_steps(path, twin, read.as_deref(), edits).ok_or_else(|| OpError::Input {
                    op: describe(op),
                    reason: format!("{LIVE_TWINS_MAP_PATH} names neither copy ({read:?})"),
                })?;
            // With no switch of the copy read between them (one entry
            // changed: the copy read, then the other), the edits go in one
            // session, in order. A switch waits for the edits before it to
            // have succeeded, so those steps go one session at a time.
            if steps
                .iter()
                .all(|step| matches!(step, TwinStep::Edit { .. }))
            {
                let mut batch = CommandBatch::new();
                for step in &steps {
                    if let TwinStep::Edit { map, edit } = step {
                        batch_edit(&mut batch, map, edit).map_err(socket)?;
                    }
                }
                return api.run_batch(&batch).await.map_err(socket);
            }
            for step in steps {
                match step {
                    TwinStep::Edit { map, edit } => edit_map(api, map, edit).await,
                    TwinStep::Read { copy } => {
                        hawser_failpoint::failpoint!("runtime.twin_edited_before_read");
                        let set = api.set_map(LIVE_TWINS_MAP_PATH, path, copy).await;
                        set.inspect(|()| live.set(path, copy))
                    }
                }
                .map_err(socket)?;
            }
            Ok(())
        }
        RuntimeOp::RemoveServer { .. } => remove_servers(api, std::slice::from_ref(op)).await,
        RuntimeOp::RemoveCertificate { path, crt_list } => {
            api.del_ssl_crt_list(crt_list, path).await.map_err(socket)?;
            api.del_ssl_cert(path).await.map_err(socket)
        }
    }
}

fn describe_edit(edit: &MapEdit) -> String {
    match edit {
        MapEdit::Add { key, .. } => format!("add {key}"),
        MapEdit::Set { key, .. } => format!("set {key}"),
        MapEdit::Del { key } => format!("del {key}"),
    }
}

/// `edit` of map `path`, added to `batch`.
fn batch_edit(batch: &mut CommandBatch, path: &str, edit: &MapEdit) -> Result<(), SocketError> {
    match edit {
        MapEdit::Add { key, value } => batch.add_map(path, key, value),
        MapEdit::Set { key, value } => batch.set_map(path, key, value),
        MapEdit::Del { key } => batch.del_map(path, key),
    }
}

/// `edit` of map `path`, in a session of its own.
async fn edit_map(api: &RuntimeApi, path: &str, edit: &MapEdit) -> Result<(), SocketError> {
    let mut batch = CommandBatch::new();
    batch_edit(&mut batch, path, edit)?;
    api.run_batch(&batch).await
}

/// `add server` creates the server in maintenance; it is enabled unless the
/// plan wants it there.
fn add_server(
    batch: &mut CommandBatch,
    backend: &str,
    server: &ServerPlan,
) -> Result<(), SocketError> {
    let ip: IpAddr = server
        .address
        .parse()
        .map_err(|_| SocketError::InvalidArgument {
            what: "server address",
            value: server.address.clone(),
            reason: "not an IP address",
        })?;
    let weight = server.weight.to_string();
    let mut keywords = vec!["weight", weight.as_str()];
    // Dynamic servers inherit nothing from the configuration: an HTTP/2
    // backend's protocol is given with each server.
    if let Some(proto) = &server.proto {
        keywords.extend(["proto", proto.as_str()]);
    }
    // And every keyword the rendered servers carry (TLS, SNI, PROXY
    // protocol, cookie): a server behaves the same however it arrived.
    keywords.extend(server.keywords.iter().map(String::as_str));
    batch.add_server(backend, &server.name, ip, server.port, &keywords)?;
    if server.state == ServerState::Ready {
        batch.enable_server(backend, &server.name)?;
    }
    Ok(())
}

/// A server in maintenance: wait until no connection is left (cut them
/// after the drain budget) → `del server`.
async fn drain_and_delete(
    api: &RuntimeApi,
    backend: &str,
    server: &str,
) -> Result<(), SocketError> {
    if api
        .wait_srv_removable(backend, server, DRAIN_BUDGET)
        .await?
        == WaitOutcome::DelayExpired
    {
        api.shutdown_sessions(backend, server).await?;
        api.wait_srv_removable(backend, server, DRAIN_BUDGET)
            .await?;
    }
    api.del_server(backend, server).await
}

fn admin_state(state: ServerState) -> AdminState {
    match state {
        ServerState::Ready => AdminState::Ready,
        ServerState::Maintenance => AdminState::Maint,
    }
}

fn pem<'a>(op: &RuntimeOp, files: &'a FileSet, path: &str) -> Result<&'a str, OpError> {
    files.text(path).ok_or_else(|| OpError::Input {
        op: describe(op),
        reason: "the desired version has no such text file".to_string(),
    })
}

fn ip(op: &RuntimeOp, address: &str) -> Result<IpAddr, OpError> {
    address.parse().map_err(|_| OpError::Input {
        op: describe(op),
        reason: format!("{address:?} is not an IP address"),
    })
}

#[cfg(test)]
mod tests;
