//! What the agent reports: its phase, generations, the last outcomes and counters.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use hawser_plan::Generation;

/// The agent's lifecycle, published on a watch channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Opening the tree and starting or adopting HAProxy.
    Starting,
    /// HAProxy serves the bootstrap configuration: not ready.
    Bootstrap,
    /// HAProxy serves a verified rendered configuration: ready.
    Serving,
    /// A reload is in flight.
    Reloading,
    /// HAProxy's master exited (a crash, or killed): it is being started
    /// again on the applied version. Not ready: nothing is listening.
    Restarting,
    /// Stopping HAProxy.
    Draining,
    Stopped,
}

impl Phase {
    /// The name status documents and probes show (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Bootstrap => "bootstrap",
            Phase::Serving => "serving",
            Phase::Reloading => "reloading",
            Phase::Restarting => "restarting",
            Phase::Draining => "draining",
            Phase::Stopped => "stopped",
        }
    }
}

/// How one desired version was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyKind {
    /// Nothing HAProxy serves changed.
    NoOp,
    /// Applied through the runtime API, no reload.
    Runtime,
    /// Applied by a verified reload.
    Reload,
    /// Refused; the previous version keeps serving.
    Rejected,
}

impl ApplyKind {
    /// The name logs, metrics and status use (as serialized).
    pub fn label(self) -> &'static str {
        match self {
            ApplyKind::NoOp => "no-op",
            ApplyKind::Runtime => "runtime",
            ApplyKind::Reload => "reload",
            ApplyKind::Rejected => "rejected",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApplyOutcome {
    pub generation: Generation,
    pub kind: ApplyKind,
    #[serde(serialize_with = "millis")]
    pub duration: Duration,
    /// What changed (runtime operations or reload reasons), for logs.
    pub summary: String,
    /// Why it was refused, in HAProxy's words where it spoke.
    pub error: Option<String>,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u128(d.as_millis())
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentStatus {
    pub phase: Phase,
    /// The newest generation handed to the agent.
    pub desired_generation: Option<Generation>,
    /// The generation HAProxy serves (verified).
    pub applied_generation: Option<Generation>,
    /// The newest generation whose change reached traffic through the
    /// runtime API; its outcome (the full check of its tree) may still be
    /// under way. What an Apply answers on, so that the controller's next
    /// version need not wait for that check.
    pub live_generation: Option<Generation>,
    pub last_outcome: Option<ApplyOutcome>,
    /// The last [`RecentOutcomes::CAPACITY`] outcomes, newest first: what a
    /// support bundle shows of the agent's recent history.
    pub recent_outcomes: RecentOutcomes,
    pub last_error: Option<String>,
    pub reloads: u64,
    pub failed_reloads: u64,
    pub runtime_ops: u64,
    pub rejected: u64,
    /// Versions that could not be written to disk, by reason (`disk_full`,
    /// `io`, ...: `TreeError::metric_label`).
    pub failed_stages: BTreeMap<String, u64>,
    pub drift_repairs: u64,
    /// Times `current` went back to the last good version (`lkg`): a
    /// version HAProxy refused, or a restart from a version that broke.
    pub rollbacks: u64,
    pub haproxy_restarts: u64,
    /// The HAProxy worker verified by the last reload.
    pub worker_pid: Option<u32>,
}

impl AgentStatus {
    pub fn starting() -> Self {
        AgentStatus {
            phase: Phase::Starting,
            desired_generation: None,
            applied_generation: None,
            live_generation: None,
            last_outcome: None,
            recent_outcomes: RecentOutcomes::default(),
            last_error: None,
            reloads: 0,
            failed_reloads: 0,
            runtime_ops: 0,
            rejected: 0,
            failed_stages: BTreeMap::new(),
            drift_repairs: 0,
            rollbacks: 0,
            haproxy_restarts: 0,
            worker_pid: None,
        }
    }

    /// Whether `generation` (or a newer one) is live at runtime.
    pub fn is_live(&self, generation: u64) -> bool {
        self.live_generation
            .is_some_and(|live| live.get() >= generation)
    }

    /// Ready means a rendered, verified configuration is serving.
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Serving
            || (self.phase == Phase::Reloading && self.applied_generation.is_some())
    }
}

/// A bounded history of apply outcomes, newest first.
///
/// [`AgentStatus`] is cloned on every status change, so the history is
/// shared behind an `Arc`: a clone is a reference count, and only a new
/// outcome (once per apply) copies the few entries, when a reader still
/// holds the previous history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecentOutcomes(Arc<VecDeque<ApplyOutcome>>);

impl RecentOutcomes {
    /// How many outcomes are kept: enough to see a pattern (a flapping
    /// reload, a run of rejections), small enough to show in `/status`.
    pub const CAPACITY: usize = 20;

    /// Records `outcome` as the newest, forgetting the oldest beyond
    /// [`Self::CAPACITY`].
    pub fn push(&mut self, outcome: ApplyOutcome) {
        let history = Arc::make_mut(&mut self.0);
        history.push_front(outcome);
        history.truncate(Self::CAPACITY);
    }

    /// Newest first.
    pub fn iter(&self) -> impl Iterator<Item = &ApplyOutcome> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for RecentOutcomes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(generation: u64) -> ApplyOutcome {
        ApplyOutcome {
            generation: Generation::new(generation),
            kind: ApplyKind::Runtime,
            duration: Duration::from_millis(3),
            summary: format!("generation {generation}"),
            error: None,
        }
    }

    #[test]
    fn keeps_the_newest_outcomes_first_up_to_capacity() {
        let mut recent = RecentOutcomes::default();
        for generation in 1..=25 {
            recent.push(outcome(generation));
        }
        let generations: Vec<u64> = recent.iter().map(|o| o.generation.get()).collect();
        assert_eq!(generations, (6..=25).rev().collect::<Vec<_>>());
    }

    #[test]
    fn a_clone_is_not_changed_by_a_later_push() {
        let mut recent = RecentOutcomes::default();
        recent.push(outcome(1));
        let before = recent.clone();
        recent.push(outcome(2));
        assert_eq!(before.len(), 1);
        assert_eq!(recent.len(), 2);
    }

    #[test]
    fn serializes_as_a_list_newest_first() {
        let mut recent = RecentOutcomes::default();
        recent.push(outcome(1));
        recent.push(outcome(2));
        let json = serde_json::to_value(&recent).expect("serializes");
        assert_eq!(json[0]["generation"], 2);
        assert_eq!(json[1]["kind"], "runtime");
    }
}
