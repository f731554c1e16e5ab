//! What the agent reports: its phase, generations, the last outcome and counters.

use std::collections::BTreeMap;
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
    pub last_outcome: Option<ApplyOutcome>,
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
            last_outcome: None,
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

    /// Ready means a rendered, verified configuration is serving.
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Serving
            || (self.phase == Phase::Reloading && self.applied_generation.is_some())
    }
}
