//! The agent's [`v1::State`], from its status and the version it holds.

use std::collections::BTreeMap;

use hawser_plan::Generation;
use hawser_proto::v1;

use super::held::HeldView;
use crate::status::{AgentStatus, ApplyKind, ApplyOutcome};

/// What does not change while the agent runs.
#[derive(Debug, Clone)]
pub struct Identity {
    pub agent: String,
    pub instance: String,
    pub haproxy_version: String,
    pub render_settings: BTreeMap<String, String>,
}

pub fn state(identity: &Identity, status: &AgentStatus, held: &HeldView, epoch: u64) -> v1::State {
    let applied = status.applied_generation.map_or(0, Generation::get);
    // Decided, or live at runtime with its check under way: either way not
    // waiting for a reload slot.
    let decided = status
        .last_outcome
        .as_ref()
        .is_some_and(|o| o.generation.get() >= held.generation)
        || status.is_live(held.generation);
    v1::State {
        agent: identity.agent.clone(),
        instance: identity.instance.clone(),
        desired_generation: held.generation,
        applied_generation: applied,
        files: held.files.clone().into_iter().collect(),
        plan_digest: held.plan_digest.clone(),
        epoch,
        haproxy_version: identity.haproxy_version.clone(),
        worker_pid: status.worker_pid.unwrap_or(0),
        last_result: status.last_outcome.as_ref().map(result),
        last_error: status.last_error.clone().unwrap_or_default(),
        reload_pending: held.generation > applied && !decided,
        phase: status.phase.as_str().to_string(),
        render_settings: identity.render_settings.clone().into_iter().collect(),
    }
}

pub fn result(outcome: &ApplyOutcome) -> v1::ApplyResult {
    v1::ApplyResult {
        generation: outcome.generation.get(),
        outcome: outcome_of(outcome.kind).into(),
        message: outcome
            .error
            .clone()
            .unwrap_or_else(|| outcome.summary.clone()),
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
    }
}

fn outcome_of(kind: ApplyKind) -> v1::Outcome {
    match kind {
        ApplyKind::NoOp => v1::Outcome::NoOp,
        ApplyKind::Runtime => v1::Outcome::Runtime,
        ApplyKind::Reload => v1::Outcome::Reload,
        ApplyKind::Rejected => v1::Outcome::Rejected,
    }
}
