//! Writing a desired version to disk, and what a failure to do so leaves.
//!
//! A failed stage has already removed what it wrote (see `tree`); here it is
//! counted by reason, and a full state directory gives up every version no
//! pointer names at once, so the space comes back without a restart. The
//! serving version (`current`, `lkg`, `loaded`) is never touched.

use tokio::time::Instant;
use tracing::{info, warn};

use super::{Core, Desired, Phases, apply_error::ApplyError};
use crate::tree::{TreeError, VersionName};

impl Core {
    /// Stages `desired`, adding the time it took to `phases`.
    pub(super) fn stage_timed(
        &self,
        desired: &Desired,
        phases: &mut Phases,
    ) -> Result<VersionName, ApplyError> {
        let began = Instant::now();
        let staged = self.stage_desired(desired).map_err(ApplyError::Stage);
        phases.stage += began.elapsed();
        staged
    }

    /// Stages `desired`; a failure is counted (and a full disk answered)
    /// before it is returned.
    pub(super) fn stage_desired(&self, desired: &Desired) -> Result<VersionName, TreeError> {
        self.tree
            .stage(desired.generation, &desired.files, &desired.plan)
            .inspect_err(|e| self.stage_failed(e))
    }

    fn stage_failed(&self, error: &TreeError) {
        let reason = error.metric_label();
        self.status.send_modify(|s| {
            *s.failed_stages.entry(reason.to_string()).or_default() += 1;
        });
        if matches!(error, TreeError::StateFull { .. }) {
            match self.tree.collect_garbage(0) {
                Ok(removed) if !removed.is_empty() => info!(
                    removed = removed.len(),
                    "the state directory is full: removed every version nothing serves"
                ),
                Ok(_) => {}
                Err(e) => warn!("cannot remove old versions: {e}"),
            }
        }
    }
}
