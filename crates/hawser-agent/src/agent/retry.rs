//! Trying a version again when it failed for a reason that is not its own:
//! the master CLI stayed busy, a socket timed out, the state directory was
//! full, `haproxy -c` could not be run. Without this, such a version would
//! wait for the next change to come along, however long that takes.
//!
//! The waits double from [`FIRST_WAIT`] to [`LONGEST_WAIT`], so a condition
//! that lasts costs one attempt a minute, never a storm of reloads. A
//! version HAProxy itself refused, or whose reload it could not verify, is
//! not tried again: the same version would fail the same way.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Desired;

/// The wait before the first retry of a version.
pub(super) const FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest wait between two retries of one version.
pub(super) const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// The version to try again, and when.
#[derive(Debug, Default)]
pub(super) struct Retry {
    pending: Option<(Arc<Desired>, Instant)>,
    /// The wait before the last retry scheduled, for the version pending.
    wait: Option<Duration>,
}

impl Retry {
    /// Schedules `desired` to be tried again, later each time it fails
    /// again.
    pub(super) fn schedule(&mut self, desired: Arc<Desired>) {
        let same = self
            .pending
            .as_ref()
            .is_some_and(|(was, _)| was.generation == desired.generation);
        let wait = match self.wait {
            Some(wait) if same => (wait * 2).min(LONGEST_WAIT),
            _ => FIRST_WAIT,
        };
        self.wait = Some(wait);
        self.pending = Some((desired, Instant::now() + wait));
    }

    /// Forgets the version pending: it applied, or a newer one came.
    pub(super) fn clear(&mut self) {
        self.pending = None;
        self.wait = None;
    }

    pub(super) fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The wait of the retry pending, for status and logs.
    pub(super) fn wait(&self) -> Option<Duration> {
        self.wait.filter(|_| self.pending.is_some())
    }

    /// Resolves with the version once its time has come; never while none
    /// is pending.
    pub(super) async fn due(&self) -> Arc<Desired> {
        match &self.pending {
            Some((desired, at)) => {
                tokio::time::sleep_until(*at).await;
                Arc::clone(desired)
            }
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hawser_plan::{FileSet, Generation, Plan};

    use super::{FIRST_WAIT, LONGEST_WAIT, Retry};
    use crate::agent::Desired;

    fn desired(generation: u64) -> Arc<Desired> {
        Arc::new(Desired {
            generation: Generation::new(generation),
            files: FileSet::default().into(),
            plan: Plan::default().into(),
        })
    }

    #[test]
    fn waits_double_for_one_version_and_start_again_for_another() {
        let mut retry = Retry::default();
        assert!(!retry.is_pending());
        retry.schedule(desired(7));
        assert_eq!(retry.wait(), Some(FIRST_WAIT));
        retry.schedule(desired(7));
        assert_eq!(retry.wait(), Some(FIRST_WAIT * 2));
        for _ in 0..10 {
            retry.schedule(desired(7));
        }
        assert_eq!(retry.wait(), Some(LONGEST_WAIT));
        retry.schedule(desired(8));
        assert_eq!(
            retry.wait(),
            Some(FIRST_WAIT),
            "a newer version starts over"
        );
        retry.clear();
        assert!(!retry.is_pending());
        assert_eq!(retry.wait(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_is_due_after_its_wait() {
        let mut retry = Retry::default();
        retry.schedule(desired(3));
        let started = tokio::time::Instant::now();
        let due = retry.due().await;
        assert_eq!(due.generation, Generation::new(3));
        assert!(started.elapsed() >= FIRST_WAIT);
    }
}
