//! The agent's local Unix socket: liveness and read-only state, with no
//! certificate involved, so an expired certificate never fails a probe and
//! never gets the agent restarted.
//!
//! One request per connection, a line: `health` or `state`. The answer is
//! `ok ...` (one line) or a JSON document, then the socket closes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tracing::debug;

/// Answers `state` with a fresh JSON document each time.
pub type StateFn = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;
/// Answers `health` with one line after `ok `.
pub type HealthFn = Arc<dyn Fn() -> String + Send + Sync>;

pub fn socket_path(state_dir: &Path) -> PathBuf {
    state_dir.join("run").join("agent.sock")
}

/// Binds the socket (replacing a stale one) and serves until dropped.
pub fn serve(
    path: &Path,
    health: HealthFn,
    state: StateFn,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let _ = std::fs::remove_file(path);
    let listener =
        UnixListener::bind(path).with_context(|| format!("cannot listen on {}", path.display()))?;
    Ok(tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let health = Arc::clone(&health);
            let state = Arc::clone(&state);
            tokio::spawn(async move {
                if let Err(e) = answer(stream, &health, &state).await {
                    debug!("local socket: {e}");
                }
            });
        }
    }))
}

async fn answer(stream: UnixStream, health: &HealthFn, state: &StateFn) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read.take(64));
    tokio::time::timeout(Duration::from_secs(5), reader.read_line(&mut line))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no request"))??;
    let reply = match line.trim() {
        "health" => format!("ok {}\n", health()),
        "state" => format!("{:#}\n", state()),
        other => format!("error: unknown request {other:?} (health or state)\n"),
    };
    write.write_all(reply.as_bytes()).await?;
    write.shutdown().await
}

/// The client side: `hawser agent health|state`.
pub async fn ask(path: &Path, request: &str) -> anyhow::Result<String> {
    let mut stream = tokio::time::timeout(Duration::from_secs(5), UnixStream::connect(path))
        .await
        .with_context(|| format!("{} did not accept in time", path.display()))?
        .with_context(|| format!("no agent answers on {}", path.display()))?;
    stream.write_all(format!("{request}\n").as_bytes()).await?;
    let mut reply = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut reply))
        .await
        .with_context(|| format!("the agent on {} did not answer in time", path.display()))??;
    Ok(reply)
}
