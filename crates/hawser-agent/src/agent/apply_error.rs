//! Why a version was not applied: one error for the apply path, each
//! variant keeping its cause (`#[source]`), so a refusal reads exactly as the
//! step that refused it says, and metrics can count the step.

use hawser_haproxy::StagedTreeError;

use crate::reload::ReloadError;
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
}

impl ApplyError {
    /// A stable category for metrics: the step, then its own reason.
    pub fn metric_label(&self) -> &'static str {
        match self {
            ApplyError::Stage(e) | ApplyError::Publish(e) => e.metric_label(),
            ApplyError::Check(e) => e.metric_label(),
            ApplyError::Reload(e) => e.metric_label(),
        }
    }
}
