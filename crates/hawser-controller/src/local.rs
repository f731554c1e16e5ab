//! Local mode: a manifests directory, watched. Every change is re-read and
//! handed to the shared [`RenderCycle`] (see [`crate::cycle`]), which the
//! cluster watchers ([`crate::cluster`]) feed the same way.
//!
//! ```text
//!  notify events ──debounce──► load_dir ──► RenderCycle ──► sink.deliver(generation)
//!                                 │                         (the in-process agent, or the fleet)
//!                           problems ──► ControllerStatus
//! ```

use std::path::{Path, PathBuf};

use hawser_k8s::load_dir;
use hawser_plan::Generation;
use hawser_render::Renderer;
use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::warn;

use crate::cycle::{ControllerStatus, DEBOUNCE, Deliver, RenderCycle, SourceRead};
use crate::quarantine::Judge;

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch {}: {source}", dir.display())]
    Watch {
        dir: PathBuf,
        #[source]
        source: notify::Error,
    },
}

/// Renders the directory now and after every change, until `stop` resolves.
/// Generations start after `first_generation - 1`; `judge`, when given,
/// checks each render before it is delivered (see [`crate::quarantine`]).
pub async fn run_local(
    dir: PathBuf,
    renderer: Renderer,
    sink: impl Deliver,
    first_generation: Generation,
    judge: Option<Judge>,
    status: watch::Sender<ControllerStatus>,
    stop: impl Future<Output = ()>,
) -> Result<(), WatchError> {
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| !e.kind.is_access()) {
            let _ = events_tx.send(());
        }
    })
    .map_err(|source| WatchError::Watch {
        dir: dir.clone(),
        source,
    })?;
    watcher
        .watch(&dir, RecursiveMode::Recursive)
        .map_err(|source| WatchError::Watch {
            dir: dir.clone(),
            source,
        })?;

    let mut cycle = RenderCycle::new(first_generation).judged_by(judge);
    read_and_render(&mut cycle, &dir, &renderer, &sink, &status).await;
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(()),
            event = events.recv() => {
                if event.is_none() {
                    return Ok(());
                }
                // Debounce: wait until the directory has been quiet for a while.
                loop {
                    tokio::select! {
                        more = events.recv() => if more.is_none() { break },
                        () = tokio::time::sleep(DEBOUNCE) => break,
                    }
                }
                read_and_render(&mut cycle, &dir, &renderer, &sink, &status).await;
            }
        }
    }
}

/// Reads the directory and renders it; a directory that cannot be read
/// keeps the last generation.
async fn read_and_render(
    cycle: &mut RenderCycle,
    dir: &Path,
    renderer: &Renderer,
    sink: &impl Deliver,
    status: &watch::Sender<ControllerStatus>,
) {
    let started = Instant::now();
    match load_dir(dir) {
        Ok(manifests) => {
            let problems = manifests.problems.iter().map(ToString::to_string).collect();
            cycle
                .render(
                    SourceRead {
                        store: manifests.store,
                        problems,
                        started,
                    },
                    renderer,
                    sink,
                    status,
                )
                .await;
        }
        Err(e) => {
            warn!("{e}; keeping the last generation");
            status.send_modify(|s| s.render_error = Some(e.to_string()));
        }
    }
}
