//! Writing a desired version to disk, and what a failure to do so leaves.
//!
//! The writing (each file written and synced) runs on a blocking thread:
//! a sync can take tens of milliseconds, and the applier's thread is
//! shared with the control service (and, in `hawser run`, with the
//! controller). A runtime change's staging is also given up when a newer
//! version comes ([`Core::stage_unless_newer`]): that version's tree holds
//! the change too, and its own runtime commands need not wait for a disk.
//!
//! A failed stage has already removed what it wrote (see `tree`); here it is
//! counted by reason, and a full state directory gives up every version no
//! pointer names at once, so the space comes back without a restart. The
//! serving version (`current`, `lkg`, `loaded`) is never touched.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{info, warn};

use super::runtime_first::unless_newer;
use super::{Core, Desired, Phases, apply_error::ApplyError};
use crate::tree::{TreeError, VersionName};

impl Core {
    /// Stages `desired`, adding the time it took to `phases`.
    pub(super) async fn stage_timed(
        &self,
        desired: &Desired,
        phases: &mut Phases,
    ) -> Result<VersionName, ApplyError> {
        let began = Instant::now();
        let staged = self.stage_on_blocking_thread(desired, Arc::default()).await;
        phases.stage += began.elapsed();
        self.counted(staged)
    }

    /// [`Core::stage_timed`], unless a `newer` version comes first
    /// (`Ok(None)`): the writing is then given up, and stops at its next
    /// file, removing what it wrote, without anything waiting for it.
    pub(super) async fn stage_unless_newer(
        &self,
        desired: &Desired,
        newer: &watch::Receiver<Option<Arc<Desired>>>,
        phases: &mut Phases,
    ) -> Result<Option<VersionName>, ApplyError> {
        let began = Instant::now();
        let given_up = Arc::new(AtomicBool::new(false));
        let staging = self.stage_on_blocking_thread(desired, Arc::clone(&given_up));
        let staged = unless_newer(newer, staging).await;
        phases.stage += began.elapsed();
        let Some(staged) = staged else {
            given_up.store(true, Ordering::Relaxed);
            return Ok(None);
        };
        self.counted(staged).map(Some)
    }

    /// A staging's result, its failure counted (and a full disk answered)
    /// before it is returned.
    fn counted(&self, staged: Result<VersionName, TreeError>) -> Result<VersionName, ApplyError> {
        staged
            .inspect_err(|e| self.stage_failed(e))
            .map_err(ApplyError::Stage)
    }

    /// Stages `desired` on a blocking thread, started at once; `given_up`
    /// stops it (see [`crate::tree::TreeStore::stage_unless`]). A version
    /// whose staging is given up after its rename into place is complete,
    /// and unnamed by any pointer: the garbage collection removes it.
    fn stage_on_blocking_thread(
        &self,
        desired: &Desired,
        given_up: Arc<AtomicBool>,
    ) -> impl Future<Output = Result<VersionName, TreeError>> + Send + 'static {
        let tree = self.tree.clone();
        let generation = desired.generation;
        let files = Arc::clone(&desired.files);
        let plan = Arc::clone(&desired.plan);
        let staging = tokio::task::spawn_blocking(move || {
            tree.stage_unless(generation, &files, &plan, &given_up)
        });
        async move {
            match staging.await {
                Ok(staged) => staged,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // The runtime is shutting down.
                Err(_) => Err(TreeError::GivenUp(VersionName(generation))),
            }
        }
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
