//! The sources of a support bundle, each read once into a JSON value.
//!
//! ```text
//!  admin listener ── GET /status ──► status ──► apply_outcomes (agent.recent_outcomes)
//!                 ── GET /metrics ─► metrics (lines)
//!  <state>/tree   ── pointers, MANIFEST, sizes ─► tree (never a file's content)
//!  runtime API    ── show info ───► haproxy_info
//!  master CLI     ── show proc ───► haproxy_proc
//! ```

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use hawser_agent::tree::VersionListing;
use hawser_agent::{AgentPaths, TreeStore, VersionName};
use hawser_haproxy::{MasterCli, Proc, RuntimeApi};
use serde_json::{Value, json};

use super::{SourceError, admin_http};

/// Why the bundle lists the served files without their content.
const CONTENT_LEFT_OUT: &str = "no file's content is included: certificates hold private keys, \
     and haproxy.cfg can hold userlist password hashes (basic-auth Secrets) and whatever \
     snippets add; each file's digest says whether it is the one expected, and `hawser render` \
     over the same objects shows its text";

pub async fn status(admin: SocketAddr) -> Result<Value, SourceError> {
    let body = admin_http::get(admin, "/status").await?;
    serde_json::from_slice(&body).map_err(SourceError::NotJson)
}

/// Prometheus text, one line an element so the bundle reads line by line.
pub async fn metrics(admin: SocketAddr) -> Result<Value, SourceError> {
    let body = admin_http::get(admin, "/metrics").await?;
    Ok(String::from_utf8_lossy(&body).lines().collect())
}

/// The agent's recent outcomes, newest first, out of a `/status` document.
pub fn apply_outcomes(status: Option<&Value>) -> Result<Value, SourceError> {
    let status = status.ok_or(SourceError::StatusMissing)?;
    match status.get("agent").and_then(|a| a.get("recent_outcomes")) {
        Some(outcomes) => Ok(outcomes.clone()),
        None => Err(SourceError::NoAgent),
    }
}

/// Which versions the pointers name and what the served one holds.
pub fn tree(paths: &AgentPaths) -> Result<Value, SourceError> {
    let store = TreeStore::inspect(paths.tree()).map_err(SourceError::Tree)?;
    let current = store
        .current()
        .ok_or_else(|| SourceError::NothingServed(store.current_path()))?;
    let served = store.listing(current).map_err(SourceError::Tree)?;
    let versions = store.versions().map_err(SourceError::Tree)?;
    Ok(json!({
        "base": store.base(),
        "current": current.to_string(),
        "lkg": store.lkg().map(|v| v.to_string()),
        "loaded": store.loaded().map(|v| v.to_string()),
        "versions": versions.iter().map(VersionName::to_string).collect::<Vec<_>>(),
        "served": listing(&served),
        "not_included": CONTENT_LEFT_OUT,
    }))
}

fn listing(listing: &VersionListing) -> Value {
    let files: Vec<Value> = listing
        .files
        .iter()
        .map(|f| json!({ "path": f.path, "kind": f.kind.name(), "size": f.size, "digest": f.digest }))
        .collect();
    json!({
        "version": listing.version.to_string(),
        "generation": listing.version.generation(),
        "plan_digest": listing.plan,
        "files": files,
    })
}

/// `show info` on the worker's runtime API.
pub async fn haproxy_info(socket: &Path, timeout: Duration) -> Result<Value, SourceError> {
    let info = RuntimeApi::new(socket)
        .with_timeout(timeout)
        .show_info()
        .await
        .map_err(SourceError::Haproxy)?;
    Ok(json!(info))
}

/// `show proc` on the master CLI.
pub async fn haproxy_proc(socket: &Path, timeout: Duration) -> Result<Value, SourceError> {
    let table = MasterCli::new(socket)
        .with_timeout(timeout)
        .show_proc()
        .await
        .map_err(SourceError::Haproxy)?;
    let procs = |procs: &[Proc]| procs.iter().map(proc).collect::<Vec<_>>();
    Ok(json!({
        "master": proc(&table.master),
        "failed_reloads": table.failed_reloads,
        "workers": procs(&table.workers),
        "old_workers": procs(&table.old_workers),
    }))
}

fn proc(proc: &Proc) -> Value {
    json!({
        "pid": proc.pid,
        "reloads": proc.reloads,
        "uptime": proc.uptime_text,
        "version": proc.version,
    })
}
