//! Why a version was not applied: one error for the apply path, each
//! variant keeping its cause (`#[source]`), so a refusal reads exactly as the
//! step that refused it says, and metrics can count the step.

use hawser_haproxy::StagedTreeError;

use crate::reload::ReloadError;
use crate::runtime_ops::OpError;
use crate::tree::TreeError;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The version could not be written to the state directory.
    #[error(transparent)]
    Stage(TreeError),
    /// The config policy, `haproxy -c` or the checks it does not make refuse it.
    #[error(transparent)]
    Check(#[from] StagedTreeError),
    /// `current` or `lkg` could not be moved to it.
    #[error(transparent)]
    Publish(TreeError),
    /// HAProxy refused it on reload, or the reload could not be verified.
    #[error(transparent)]
    Reload(#[from] ReloadError),
    /// HAProxy's runtime API took a command and did not answer, or refuses
    /// this process access: the change could not be made at runtime, and a
    /// reload would not be verified either.
    #[error("HAProxy's runtime API cannot take the change: {0}")]
    Unanswered(OpError),
}

impl ApplyError {
    /// Whether the failure is not the version's own, so the same version
    /// may apply later (see the `retry` module): the state directory or a
    /// socket failed, the master CLI stayed busy, or `haproxy -c` could
    /// not be run. A version the policy, `haproxy -c` or HAProxy's reload
    /// refused, or whose reload was not verified, would fail again.
    pub fn is_transient(&self) -> bool {
        match self {
            ApplyError::Stage(_) | ApplyError::Publish(_) | ApplyError::Unanswered(_) => true,
            ApplyError::Check(e) => matches!(e, StagedTreeError::Unjudged(_)),
            ApplyError::Reload(e) => matches!(
                e,
                ReloadError::Busy | ReloadError::Socket(_) | ReloadError::StateFile { .. }
            ),
        }
    }

    /// A stable category for metrics: the step, then its own reason.
    pub fn metric_label(&self) -> &'static str {
        match self {
            ApplyError::Stage(e) | ApplyError::Publish(e) => e.metric_label(),
            ApplyError::Check(e) => e.metric_label(),
            ApplyError::Reload(e) => e.metric_label(),
            ApplyError::Unanswered(e) if e.is_denied() => "runtime_denied",
            ApplyError::Unanswered(_) => "runtime_unanswered",
        }
    }
}
