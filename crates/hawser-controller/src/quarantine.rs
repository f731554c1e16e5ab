//! Quarantine: one object HAProxy refuses never freezes the fleet.
//!
//! ```text
//!  store ──render──► files ──gate──► ok ──► served (the quarantined listed as rejected)
//!    ▲                          │
//!    └── without the object ◄── refused, blamed on an object (fault_of)
//!                               refused otherwise ──► QuarantineError: the last valid one serves on
//! ```
//!
//! When the gate refuses a render, the object the failing line (or the
//! certificate file) came from is left out and the store renders again, at
//! most [`MAX_QUARANTINED`] times. Quarantined objects are reported as
//! rejected diagnostics, so they reach every place a rejection does:
//! `/status`, the logs, Kubernetes Events, `hawser validate`. Content of
//! snippets and overrides is never quarantined away: a render refused for
//! them is refused whole.
//!
//! An object stays quarantined while it is unchanged, so a bad object costs
//! one failed check when it appears, not one per render; once its owner
//! changes it, it is tried again.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::Arc;

use hawser_haproxy::{CheckReport, ConfigPolicy, HaproxyBinary};
use hawser_model::{Object, ObjectRef, Store};
use hawser_render::{
    Diagnostic, Fault, Plan, RenderError, Rendered, Renderer, RouteStatus, Severity, fault_of,
};

use tracing::warn;

use crate::gate::GateError;

/// How many objects one render may leave out before the candidate is
/// refused whole: past a few, the fault is rarely theirs.
pub const MAX_QUARANTINED: usize = 4;

/// The longest part of HAProxy's complaint a quarantine reason quotes.
const REASON_LIMIT: usize = 400;

/// The gate's verdict on a render, to be awaited.
pub type Verdict<'a> = Pin<Box<dyn Future<Output = Result<(), GateError>> + Send + 'a>>;

/// Judges a render before it is served: the gate's `haproxy -c` and checks.
#[derive(Clone)]
pub struct Judge(Arc<dyn for<'a> Fn(&'a Rendered) -> Verdict<'a> + Send + Sync>);

impl Judge {
    pub fn new(
        judge: impl for<'a> Fn(&'a Rendered) -> Verdict<'a> + Send + Sync + 'static,
    ) -> Self {
        Judge(Arc::new(judge))
    }

    /// The validation gate: `policy`, then `haproxy -c` on a staged tree and
    /// the checks `-c` does not make (see [`crate::gate::check`]).
    pub fn gate(haproxy: HaproxyBinary, policy: ConfigPolicy) -> Self {
        Judge::gate_reporting(haproxy, policy, |_| {})
    }

    /// [`Judge::gate`], handing each passing check's report (HAProxy's
    /// warnings) to `report`.
    pub fn gate_reporting(
        haproxy: HaproxyBinary,
        policy: ConfigPolicy,
        report: impl Fn(CheckReport) + Send + Sync + 'static,
    ) -> Self {
        let gate = Arc::new((haproxy, policy, report));
        Judge::new(move |rendered: &Rendered| {
            let gate = Arc::clone(&gate);
            Box::pin(async move {
                let (haproxy, policy, report) = gate.as_ref();
                report(crate::gate::check(haproxy, policy, &rendered.files).await?);
                Ok(())
            })
        })
    }

    /// The gate of the controller's render cycle, whose policy trusts the
    /// paths of each render's own configuration (see
    /// [`crate::gate::config_policy`]). That configuration is the
    /// controller's, with the settings its agents ask for (their own socket
    /// and state file, which each agent's policy trusts alike): never
    /// anything a candidate object says.
    pub fn render_gate(haproxy: HaproxyBinary) -> Self {
        let haproxy = Arc::new(haproxy);
        Judge::new(move |rendered: &Rendered| {
            let haproxy = Arc::clone(&haproxy);
            Box::pin(async move {
                let policy = crate::gate::config_policy(&rendered.config);
                crate::gate::check(&haproxy, &policy, &rendered.files).await?;
                Ok(())
            })
        })
    }

    /// This judge, except that a check that could not run (HAProxy missing,
    /// a timeout, no room to stage) lets the render pass with a warning:
    /// that is no verdict on the render, and the agent's own check of what it
    /// stages decides. For the controller's render cycle, where refusing
    /// would hold back every change for a reason none of them caused.
    pub fn lenient(self) -> Self {
        Judge::new(move |rendered: &Rendered| {
            let verdict = self.judge(rendered);
            Box::pin(async move {
                match verdict.await {
                    Err(unjudged @ (GateError::Haproxy(_) | GateError::Stage(_))) => {
                        warn!(
                            "the gate could not check the render ({unjudged}); handing it on for the agent to check"
                        );
                        Ok(())
                    }
                    other => other,
                }
            })
        })
    }

    pub fn judge<'a>(&self, rendered: &'a Rendered) -> Verdict<'a> {
        (self.0)(rendered)
    }
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Judge")
    }
}

/// An object left out of the configuration, as its owner last wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    pub object: Object,
    pub reason: String,
    /// A Gateway API route's status while it is left out: `Accepted=False`
    /// (`Quarantined`) on each parent it had.
    pub route_status: Option<RouteStatus>,
}

impl Quarantined {
    pub fn object_ref(&self) -> ObjectRef {
        self.object.object_ref()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum QuarantineError {
    #[error("the configuration would not render: {0}")]
    Render(#[source] RenderError),
    /// Refused for something no object carries (a snippet, an override).
    #[error("{0}")]
    Refused(#[source] GateError),
    #[error("HAProxy still refuses the configuration with {MAX_QUARANTINED} objects left out: {0}")]
    TooMany(#[source] GateError),
}

impl QuarantineError {
    /// A stable category for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            QuarantineError::Render(_) => "render",
            QuarantineError::Refused(_) => "refused",
            QuarantineError::TooMany(_) => "too_many",
        }
    }
}

/// A render the gate accepted, and what it left out to get there.
#[derive(Debug)]
pub struct Checked {
    pub rendered: Rendered,
    /// What the render was made from: `store` less the quarantined objects.
    pub store: Store,
    pub quarantined: Vec<Quarantined>,
}

/// Renders `store` (as the version after `previous`, see
/// [`Renderer::render_after`]) without the objects of `earlier` that are
/// still there unchanged, then lets `judge` judge it, leaving out each object it blames
/// until it passes. A render `passes_unjudged` says nothing it could refuse
/// changed in is not judged.
pub async fn render_checked(
    renderer: &Renderer,
    store: &Store,
    previous: Option<&Plan>,
    earlier: &[Quarantined],
    judge: &Judge,
    passes_unjudged: impl Fn(&Rendered) -> bool,
) -> Result<Checked, QuarantineError> {
    let mut store = Cow::Borrowed(store);
    let mut quarantined = Vec::new();
    for kept in earlier {
        let owned = store.to_mut();
        match owned.remove(&kept.object_ref()) {
            Some(current) if current == kept.object => quarantined.push(kept.clone()),
            // Changed by its owner: try it again.
            Some(current) => {
                owned.insert(current);
            }
            None => {}
        }
    }
    loop {
        let rendered = renderer
            .render_after(&store, previous)
            .map_err(QuarantineError::Render)?;
        let verdict = if passes_unjudged(&rendered) {
            Ok(())
        } else {
            judge.judge(&rendered).await
        };
        let refused = match verdict {
            Ok(()) => {
                return Ok(Checked {
                    rendered: with_diagnostics(rendered, &quarantined),
                    store: store.into_owned(),
                    quarantined,
                });
            }
            Err(refused) => refused,
        };
        let GateError::Rejected { output, .. } = &refused else {
            return Err(QuarantineError::Refused(refused));
        };
        let Fault::Object(blamed) = fault_of(&rendered, output) else {
            return Err(QuarantineError::Refused(refused));
        };
        if quarantined.len() >= MAX_QUARANTINED {
            return Err(QuarantineError::TooMany(refused));
        }
        let Some(object) = store.to_mut().remove(&blamed) else {
            // Blamed on something not in the store: leaving it out cannot help.
            return Err(QuarantineError::Refused(refused));
        };
        let reason = reason(output);
        let route_status = rendered
            .gateway_status
            .routes
            .iter()
            .find(|status| status.route == blamed)
            .map(|status| status.quarantined(&reason));
        quarantined.push(Quarantined {
            object,
            reason,
            route_status,
        });
    }
}

fn with_diagnostics(mut rendered: Rendered, quarantined: &[Quarantined]) -> Rendered {
    rendered
        .diagnostics
        .extend(quarantined.iter().map(|q| Diagnostic {
            severity: Severity::Rejected,
            object: q.object_ref(),
            message: format!("quarantined: {}", q.reason),
        }));
    rendered.diagnostics.sort();
    rendered.diagnostics.dedup();
    let routes: Vec<&RouteStatus> = quarantined
        .iter()
        .filter_map(|q| q.route_status.as_ref())
        .collect();
    if !routes.is_empty() {
        let status = Arc::make_mut(&mut rendered.gateway_status);
        status.routes.extend(routes.into_iter().cloned());
        status.routes.sort_by(|a, b| a.route.cmp(&b.route));
    }
    rendered
}

/// HAProxy's first alert, without the prefix, bounded.
fn reason(output: &str) -> String {
    let alert = output
        .lines()
        .find(|line| line.contains("[ALERT]"))
        .unwrap_or(output);
    let text = alert
        .split_once("config : ")
        .map_or(alert, |(_, rest)| rest)
        .trim();
    let mut bounded: String = text.chars().take(REASON_LIMIT).collect();
    if bounded.len() < text.len() {
        bounded.push('…');
    }
    format!("HAProxy refuses the configuration it produces: {bounded}")
}

#[cfg(test)]
mod tests;
