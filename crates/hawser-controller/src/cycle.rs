//! The render cycle every source shares: render what a source read, judge
//! it (leaving out what HAProxy refuses, see [`crate::quarantine`]), skip
//! renders that change nothing, hand the others to a [`Deliver`] sink as the
//! next generation, and report in [`ControllerStatus`].
//!
//! ```text
//!  SourceRead { store, problems } ──► RenderCycle::render ──► judge ──► changed? ──► sink.deliver(generation)
//!  (manifests: local, cluster)                 │                                  (in-process agent, or the fleet)
//!                                        diagnostics ──► ControllerStatus (watch), one log line each
//! ```

use std::sync::Arc;
use std::time::Duration;

use hawser_model::Store;
use hawser_plan::Generation;
use hawser_render::{RenderConfig, Rendered, Renderer, ServedCertificates, Severity, SpareStatus};
use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::cluster::ClusterStatus;
use crate::quarantine::{Checked, Judge, QuarantineError, Quarantined, render_checked};

/// Where each new render goes.
pub trait Deliver {
    /// The renderer to render with, made from the source's `base`: the
    /// fleet renders for the settings its agents ask for, so one render is
    /// judged, reported and pushed. `None`: `base` itself.
    fn renderer(&self, _base: &Renderer) -> Option<Arc<Renderer>> {
        None
    }

    /// Changes each time [`Deliver::renderer`] would give another renderer
    /// (the fleet's agents say what they ask for): the source renders
    /// again at once, its store as it is, so that the next change is not
    /// the one to pay for the new renderer. `None`: it never changes.
    fn renderer_changes(&self) -> Option<watch::Receiver<()>> {
        None
    }

    /// A render that differs from the last: the next generation.
    fn deliver(&self, render: &CycleRender);

    /// Every store rendered without error, delivered or not (a render
    /// equal to the last is not delivered, but what it was made from may
    /// still change the status written about it). `render.generation` is
    /// the one whose configuration this render is: the new one, or the
    /// last delivered when the render is equal to it.
    fn rendered(&self, _render: &CycleRender) {}
}

/// Resolves when `changes` (a sink's [`Deliver::renderer_changes`]) says
/// the renderer changed; never when there are none to follow.
pub async fn renderer_changed(changes: &mut Option<watch::Receiver<()>>) {
    if let Some(receiver) = changes {
        if receiver.changed().await.is_ok() {
            return;
        }
        // The sink is gone: nothing will change any more.
        *changes = None;
    }
    std::future::pending().await
}

/// One render of the cycle, as handed to a [`Deliver`] sink.
#[derive(Debug, Clone)]
pub struct CycleRender {
    pub generation: Generation,
    /// What was rendered: the source's read, less what is quarantined.
    pub store: Arc<Store>,
    pub rendered: Arc<Rendered>,
    /// The source's configuration (the renderer's before
    /// [`Deliver::renderer`] added the sink's settings).
    pub config: Arc<RenderConfig>,
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
    /// Objects left out because HAProxy refuses the configuration they
    /// produce (`Secret app/old: HAProxy refuses ...`); the rest is served.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quarantined: Vec<String>,
    /// What the source could not use in its last read: manifest problems
    /// (`file:line: ...`) or cluster objects that do not convert
    /// (`Ingress app/web: ...`).
    pub source_problems: Vec<String>,
    /// The cluster source's watches (`hawser controller --kubernetes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterStatus>,
    #[serde(serialize_with = "millis")]
    pub last_render_duration: Duration,
    /// The spare backends of the last render: how many are free, and which
    /// Service each lent one serves (its name in HAProxy's statistics).
    pub spare_backends: SpareStatus,
    /// The Secrets the last render serves as certificates, by
    /// `namespace/name`: when each expires (`notAfter`, Unix seconds), its
    /// hosts, and what its checks warn about (expired, not yet valid, not
    /// for a host, without its intermediate).
    pub served_certificates: ServedCertificates,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(d.as_millis())
}

/// What a source read: the objects it could use, and what it could not
/// (`file:line: ...` for manifests, `Ingress app/web: ...` for the cluster).
#[derive(Debug)]
pub struct SourceRead {
    pub store: Store,
    pub problems: Vec<String>,
    /// When the read began: the render duration reported counts from here.
    pub started: Instant,
}

/// The render path every source shares: render a store, skip renders that
/// change nothing, hand the others to the sink as the next generation, and
/// report in [`ControllerStatus`].
#[derive(Debug)]
pub struct RenderCycle {
    next_generation: Generation,
    /// The last render handed over, to skip renders that change nothing.
    last: Option<Arc<Rendered>>,
    /// Diagnostics already logged, so each is logged once, when it appears.
    reported: Vec<String>,
    /// Checks each render before it is delivered; none: delivered unchecked
    /// (the agent checks it anyway).
    judge: Option<Judge>,
    /// Objects left out of the last render, until their owners change them.
    quarantined: Vec<Quarantined>,
}

impl RenderCycle {
    /// Generations start at `first_generation`.
    pub fn new(first_generation: Generation) -> Self {
        RenderCycle {
            next_generation: first_generation,
            last: None,
            reported: Vec::new(),
            judge: None,
            quarantined: Vec::new(),
        }
    }

    /// Checks every render with `judge` first, leaving out the objects
    /// HAProxy refuses (quarantine) and refusing a render whose fault is
    /// no object's.
    pub fn judged_by(mut self, judge: Option<Judge>) -> Self {
        self.judge = judge.map(Judge::lenient);
        self
    }

    /// The render to hand on. With a judge, objects HAProxy refuses are left
    /// out (see [`crate::quarantine`]); a render refused for anything else
    /// is handed on as it is, so the agent refuses it with HAProxy's words
    /// and reports it (`last_outcome`, metrics) while the last valid
    /// version serves on, as it would without a judge.
    async fn checked_render(
        &self,
        renderer: &Renderer,
        store: &Store,
    ) -> Result<Checked, QuarantineError> {
        let previous = self.last.as_ref().map(|last| &*last.plan);
        let Some(judge) = &self.judge else {
            let rendered = renderer
                .render_after(store, previous)
                .map_err(QuarantineError::Render)?;
            return Ok(Checked {
                rendered,
                store: store.clone(),
                quarantined: Vec::new(),
            });
        };
        let last = self.last.as_ref();
        let unchanged =
            |rendered: &Rendered| last.is_some_and(|last| only_runtime_changes(last, rendered));
        let earlier = &self.quarantined;
        match render_checked(renderer, store, previous, earlier, judge, unchanged).await {
            Err(QuarantineError::Refused(refused) | QuarantineError::TooMany(refused)) => {
                warn!(
                    "no object HAProxy refuses can be left out ({refused}); handing the render on for the agent to refuse"
                );
                render_checked(renderer, store, previous, earlier, judge, |_| true).await
            }
            other => other,
        }
    }

    /// Renders what a source read; returns the generation handed to the
    /// sink, or `None` when the render failed or changed nothing.
    pub async fn render(
        &mut self,
        read: SourceRead,
        renderer: &Renderer,
        sink: &impl Deliver,
        status: &watch::Sender<ControllerStatus>,
    ) -> Option<Generation> {
        let SourceRead {
            store,
            problems,
            started,
        } = read;
        let config = Arc::clone(renderer.config());
        let for_sink = sink.renderer(renderer);
        let renderer = for_sink.as_deref().unwrap_or(renderer);
        let rendering = Instant::now();
        let checked = self
            .checked_render(renderer, &store)
            .await
            .map(|checked| (checked.rendered, checked.store, checked.quarantined))
            .map_err(|e| e.to_string());
        let (rendered, store, quarantined) = match checked {
            Ok(checked) => checked,
            Err(e) => {
                warn!("render failed: {e}; keeping the last generation");
                status.send_modify(|s| {
                    s.renders += 1;
                    s.render_error = Some(e);
                    s.source_problems = problems;
                });
                return None;
            }
        };
        self.quarantined = quarantined;
        let quarantined: Vec<String> = self
            .quarantined
            .iter()
            .map(|q| format!("{}: {}", q.object_ref(), q.reason))
            .collect();
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
        let store = Arc::new(store);
        let rendered = Arc::new(rendered);
        let generation = (!unchanged).then(|| {
            let generation = self.next_generation;
            self.next_generation = generation.next();
            generation
        });
        let render = CycleRender {
            // A render equal to the last is that generation's configuration.
            generation: generation.unwrap_or(self.next_generation.previous()),
            store,
            rendered,
            config,
        };
        if let Some(generation) = generation {
            info!(
                generation = generation.get(),
                read_ms = (rendering - started).as_millis() as u64,
                render_ms = rendering.elapsed().as_millis() as u64,
                "rendered: {} objects",
                render.store.len()
            );
            sink.deliver(&render);
            self.last = Some(Arc::clone(&render.rendered));
            // What the sink woke (the pushes to agents, the local agent)
            // runs first, on this thread, before the bookkeeping below.
            tokio::task::yield_now().await;
        }
        sink.rendered(&render);
        status.send_modify(|s| {
            s.renders += 1;
            s.render_error = None;
            s.diagnostics = diagnostics;
            s.quarantined = quarantined;
            s.source_problems = problems;
            s.last_render_duration = started.elapsed();
            s.spare_backends = SpareStatus::of(&render.rendered.plan);
            s.served_certificates = (*render.rendered.served_certificates).clone();
            if generation.is_some() {
                s.generation = generation;
            }
        });
        generation
    }
}

/// True when `next` differs from `last` (a render the judge passed) only in
/// what the runtime API changes and hawser's own typed checks cover: the
/// servers of backends and the entries of maps. Such a render needs no new
/// `haproxy -c` before it is delivered; the agent checks what it stages.
fn only_runtime_changes(last: &Rendered, next: &Rendered) -> bool {
    use hawser_render::{CONFIG_PATH, FileKind, RenderedFile};
    // Compared in place: certificates are large, and this runs on every render.
    fn structural(rendered: &Rendered) -> impl Iterator<Item = (&str, &RenderedFile)> {
        rendered
            .files
            .iter()
            .filter(|(path, file)| *path != CONFIG_PATH && file.kind != FileKind::Map)
    }
    last.plan.structure_digest == next.plan.structure_digest
        && structural(last).eq(structural(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that wakes a task waiting for renders, as the pushes to
    /// agents and the local agent wait.
    struct Wakes(watch::Sender<u64>);

    impl Deliver for Wakes {
        fn deliver(&self, render: &CycleRender) {
            self.0.send_replace(render.generation.get());
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn what_a_render_wakes_runs_before_the_cycle_goes_on() {
        let (sink, mut delivered) = watch::channel(0);
        let (status, seen_status) = watch::channel(ControllerStatus::default());
        let waiter = tokio::spawn(async move {
            delivered.changed().await.expect("a render is delivered");
            // How many renders the cycle had counted when this ran.
            seen_status.borrow().renders
        });
        // The waiter waits before the render.
        tokio::task::yield_now().await;
        let renderer = Renderer::new(RenderConfig::default()).expect("the default config");
        let read = SourceRead {
            store: Store::new(),
            problems: Vec::new(),
            started: Instant::now(),
        };
        let mut cycle = RenderCycle::new(Generation::new(1));
        let generation = cycle.render(read, &renderer, &Wakes(sink), &status).await;
        assert_eq!(generation, Some(Generation::new(1)));
        assert_eq!(waiter.await.expect("the waiter ends"), 0);
        assert_eq!(status.borrow().renders, 1);
    }
}
