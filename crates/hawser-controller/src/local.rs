//! Local mode: a manifests directory, watched. Every change is re-read,
//! re-rendered, and handed to the agent as a new generation when the result
//! differs from the last one.
//!
//! ```text
//!  notify events ──debounce──► load_dir ──► render ──► changed? ──► sink.deliver(generation)
//!                                                                  (the in-process agent, or the fleet)
//!                                 │            │
//!                           problems      diagnostics ──► ControllerStatus (watch), one log line each
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hawser_agent::{AgentHandle, Desired, Generation};
use hawser_model::Store;
use hawser_render::{Rendered, Renderer, Severity};
use notify::{RecursiveMode, Watcher};
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{info, warn};

use crate::manifests::load_dir;

/// Quiet time after the last file event before re-reading: an editor's save
/// (write temp, rename) or a `cp -r` is one change, not many.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Where each new render goes.
pub trait Deliver {
    /// `rendered` is the render of `store` under the controller's own settings.
    fn deliver(&self, generation: Generation, store: &Arc<Store>, rendered: &Rendered);
}

/// `hawser run`: straight to the in-process agent.
impl Deliver for AgentHandle {
    fn deliver(&self, generation: Generation, _store: &Arc<Store>, rendered: &Rendered) {
        self.submit(Desired {
            generation,
            files: rendered.files.clone(),
            plan: rendered.plan.clone(),
        });
    }
}

/// What the controller side of `hawser run` reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ControllerStatus {
    /// The newest generation handed to the agent.
    pub generation: Option<Generation>,
    pub renders: u64,
    /// Why the last render produced nothing (a template error); the previous
    /// generation keeps serving.
    pub render_error: Option<String>,
    /// Rejected objects and warnings of the last render (`rejected: Ingress a/b: ...`).
    pub diagnostics: Vec<String>,
    /// Manifest problems of the last read (`file:line: ...`).
    pub manifest_problems: Vec<String>,
    #[serde(serialize_with = "millis")]
    pub last_render_duration: Duration,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(d.as_millis())
}

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
/// Generations start after `first_generation - 1`.
pub async fn run_local(
    dir: PathBuf,
    renderer: Renderer,
    sink: impl Deliver,
    first_generation: Generation,
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

    let mut cycle = RenderCycle {
        next_generation: first_generation,
        last: None,
        reported: Vec::new(),
    };
    cycle.once(&dir, &renderer, &sink, &status);
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
                cycle.once(&dir, &renderer, &sink, &status);
            }
        }
    }
}

struct RenderCycle {
    next_generation: Generation,
    /// The last render handed over, to skip renders that change nothing.
    last: Option<Rendered>,
    /// Diagnostics already logged, so each is logged once, when it appears.
    reported: Vec<String>,
}

impl RenderCycle {
    fn once(
        &mut self,
        dir: &Path,
        renderer: &Renderer,
        sink: &impl Deliver,
        status: &watch::Sender<ControllerStatus>,
    ) {
        let started = Instant::now();
        let manifests = match load_dir(dir) {
            Ok(m) => m,
            Err(e) => {
                warn!("{e}; keeping the last generation");
                status.send_modify(|s| s.render_error = Some(e.to_string()));
                return;
            }
        };
        let problems: Vec<String> = manifests.problems.iter().map(ToString::to_string).collect();
        let rendered = match renderer.render(&manifests.store) {
            Ok(r) => r,
            Err(e) => {
                warn!("render failed: {e}; keeping the last generation");
                status.send_modify(|s| {
                    s.renders += 1;
                    s.render_error = Some(e.to_string());
                    s.manifest_problems = problems;
                });
                return;
            }
        };
        let diagnostics: Vec<String> = rendered
            .diagnostics
            .iter()
            .filter(|d| d.severity != Severity::Ignored)
            .map(ToString::to_string)
            .collect();
        for line in problems.iter().chain(&diagnostics) {
            if !self.reported.contains(line) {
                warn!("{line}");
            }
        }
        self.reported = problems.iter().chain(&diagnostics).cloned().collect();
        let unchanged = self
            .last
            .as_ref()
            .is_some_and(|last| last.files == rendered.files && last.plan == rendered.plan);
        let generation = if unchanged {
            None
        } else {
            let generation = self.next_generation;
            self.next_generation += 1;
            info!(generation, "rendered: {} objects", manifests.store.len());
            sink.deliver(generation, &Arc::new(manifests.store), &rendered);
            self.last = Some(rendered);
            Some(generation)
        };
        status.send_modify(|s| {
            s.renders += 1;
            s.render_error = None;
            s.diagnostics = diagnostics;
            s.manifest_problems = problems;
            s.last_render_duration = started.elapsed();
            if generation.is_some() {
                s.generation = generation;
            }
        });
    }
}
