//! `hawser support-bundle`: what a support engineer needs from one HAProxy
//! pod (or one `hawser run`), collected into one file.
//!
//! ```text
//!  --admin ADDR      GET /status, /metrics ──┐
//!  --state-dir DIR   tree pointers, MANIFEST ├─► sections (each bounded by SOURCE_TIMEOUT;
//!                    show info, show proc  ──┘   a failure is recorded, the rest still
//!                                                 written) ──► --out FILE | - (stdout)
//! ```
//!
//! The bundle is **one JSON document** with named sections, not a
//! `.tar.gz` of files: `jq` and any editor read it, it streams through
//! `kubectl exec ... > bundle.json` as text, and it needs no archive crate
//! (none is in the workspace). Text sources (`/metrics`) are kept as an
//! array of lines so they stay readable pretty-printed and come back with
//! `jq -r '.sections.metrics.content[]'`.
//!
//! ```text
//!  { "bundle":   { "format", "made_at", "hawser_version", "pod", "admin", "state_dir" },
//!    "sections": { "status" | "metrics" | "apply_outcomes" | "tree"
//!                  | "haproxy_info" | "haproxy_proc":
//!                    { "source", "ok": true,  "content": ... }
//!                  | { "source", "ok": false, "error": "what failed: why" } } }
//! ```
//!
//! Never key material: the tree section lists each served file's path,
//! kind, size and digest, never its content; haproxy.cfg is left out too,
//! as it can hold userlist password hashes from basic-auth Secrets (see
//! [`sources::tree`]). Exit 0 when at least one section was collected;
//! 1, writing nothing, when none was.

mod admin_http;
mod sources;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use hawser_agent::{AgentPaths, TreeError};
use hawser_haproxy::SocketError;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cli::SupportBundleArgs;

/// The longest any one source may take; they are read concurrently, so a
/// bundle takes about this long at worst.
const SOURCE_TIMEOUT: Duration = Duration::from_secs(3);
/// Names the layout of the document, for tools that read bundles.
const FORMAT: &str = "hawser-support-bundle/1";

/// Why one source could not be read. Recorded in its section, with its
/// causes, in place of the content.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    #[error("cannot GET {path} from the admin listener {admin}")]
    AdminUnreachable {
        admin: SocketAddr,
        path: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("GET {path} from the admin listener {admin}: {reason}")]
    AdminReply {
        admin: SocketAddr,
        path: &'static str,
        reason: String,
    },
    #[error("/status is not JSON")]
    NotJson(#[source] serde_json::Error),
    #[error("/status could not be read (see the status section)")]
    StatusMissing,
    #[error("/status reports no agent (a controller's admin listener has none)")]
    NoAgent,
    #[error("the versioned tree cannot be read")]
    Tree(#[source] TreeError),
    #[error("no version is served: {} names none", .0.display())]
    NothingServed(PathBuf),
    #[error("haproxy did not answer")]
    Haproxy(#[source] SocketError),
    #[error("the reading task failed")]
    Task(#[source] tokio::task::JoinError),
}

/// One section: where it came from and what it gave.
#[derive(Debug)]
struct Section {
    name: &'static str,
    source: String,
    result: Result<Value, SourceError>,
}

impl Section {
    fn to_json(&self) -> Value {
        match &self.result {
            Ok(content) => json!({ "source": self.source, "ok": true, "content": content }),
            Err(e) => json!({ "source": self.source, "ok": false, "error": describe(e) }),
        }
    }
}

pub async fn run(args: &SupportBundleArgs) -> anyhow::Result<ExitCode> {
    let made_at = OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default();
    let sections = collect(args.admin, &args.state_dir).await;
    let collected = sections.iter().filter(|s| s.result.is_ok()).count();
    if collected == 0 {
        let tried: Vec<String> = sections
            .iter()
            .map(|s| format!("  {} ({}): {}", s.name, s.source, error_text(&s.result)))
            .collect();
        anyhow::bail!(
            "nothing could be collected, so no bundle was written; tried:\n{}",
            tried.join("\n")
        );
    }
    let document = json!({
        "bundle": {
            "format": FORMAT,
            "made_at": made_at,
            "hawser_version": env!("CARGO_PKG_VERSION"),
            "pod": pod(),
            "admin": args.admin.to_string(),
            "state_dir": args.state_dir,
        },
        "sections": sections
            .iter()
            .map(|s| (s.name.to_string(), s.to_json()))
            .collect::<Map<String, Value>>(),
    });
    write(&args.out, &document)?;
    report(&args.out, &sections);
    Ok(ExitCode::SUCCESS)
}

/// Reads every source concurrently, each within [`SOURCE_TIMEOUT`].
async fn collect(admin: SocketAddr, state_dir: &Path) -> Vec<Section> {
    let paths = AgentPaths::new(state_dir);
    let tree_paths = paths.clone();
    let (master, runtime) = (paths.master_socket(), paths.runtime_socket());
    let (status, metrics, tree, info, proc) = tokio::join!(
        bounded(sources::status(admin)),
        bounded(sources::metrics(admin)),
        bounded(async move {
            tokio::task::spawn_blocking(move || sources::tree(&tree_paths))
                .await
                .map_err(SourceError::Task)?
        }),
        bounded(sources::haproxy_info(&runtime, SOURCE_TIMEOUT)),
        bounded(sources::haproxy_proc(&master, SOURCE_TIMEOUT)),
    );
    let outcomes = sources::apply_outcomes(status.as_ref().ok());
    vec![
        section("status", format!("GET /status on {admin}"), status),
        section("metrics", format!("GET /metrics on {admin}"), metrics),
        section(
            "apply_outcomes",
            "agent.recent_outcomes of /status, newest first".to_string(),
            outcomes,
        ),
        section("tree", shown(&paths.tree()), tree),
        section(
            "haproxy_info",
            format!("show info on {}", shown(&runtime)),
            info,
        ),
        section(
            "haproxy_proc",
            format!("show proc on {}", shown(&master)),
            proc,
        ),
    ]
}

fn section(name: &'static str, source: String, result: Result<Value, SourceError>) -> Section {
    Section {
        name,
        source,
        result,
    }
}

async fn bounded(
    source: impl Future<Output = Result<Value, SourceError>>,
) -> Result<Value, SourceError> {
    tokio::time::timeout(SOURCE_TIMEOUT, source)
        .await
        .unwrap_or(Err(SourceError::TimedOut(SOURCE_TIMEOUT)))
}

fn write(out: &Path, document: &Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(document).context("cannot encode the bundle")?;
    text.push('\n');
    if out == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .context("cannot write the bundle to stdout")
    } else {
        std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))
    }
}

/// One line on stderr (stdout may be the bundle): where it went, and
/// which sources failed.
fn report(out: &Path, sections: &[Section]) {
    let failed: Vec<&str> = sections
        .iter()
        .filter(|s| s.result.is_err())
        .map(|s| s.name)
        .collect();
    let target = if out == Path::new("-") {
        "stdout".to_string()
    } else {
        out.display().to_string()
    };
    if failed.is_empty() {
        eprintln!("support bundle written to {target}: every section collected");
    } else {
        eprintln!(
            "support bundle written to {target}: {} of {} sections collected; failed (their errors are in the bundle): {}",
            sections.len() - failed.len(),
            sections.len(),
            failed.join(", ")
        );
    }
}

/// The Pod this runs in, from the environment the chart gives every container.
fn pod() -> Value {
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (var("POD_NAMESPACE"), var("POD_NAME")) {
        (Some(namespace), Some(name)) => json!(format!("{namespace}/{name}")),
        (None, Some(name)) => json!(name),
        _ => Value::Null,
    }
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn error_text(result: &Result<Value, SourceError>) -> String {
    result.as_ref().err().map(describe).unwrap_or_default()
}

/// The error and its causes, `: `-separated, as `{:#}` prints an anyhow
/// error; a cause its error already ends with (`TreeError` prints its
/// own) is said once.
fn describe(error: &SourceError) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(e) = cause {
        let said = e.to_string();
        if !text.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = e.source();
    }
    text
}
