//! When a source renders after a change: at once for a lone change (leading
//! edge), coalesced during a burst (trailing edge, bounded).
//!
//! ```text
//!  change ──► idle for BURST?  ── yes ──► render after SETTLE of quiet   (a lone change: ~10 ms)
//!                 │ no (a render just ran: a burst)
//!                 └─────────────────────► render after DEBOUNCE of quiet, LIMIT after the first at most
//!  a file still being written (local) ──► hold, LIMIT after the first at most
//! ```
//!
//! SETTLE gathers the events of one operation (an editor's write and
//! rename, a rollout's EndpointSlice and Pod updates sent together) without
//! making a lone change wait. Once a render has run, further changes within
//! BURST are a burst: a `cp -r` or a rolling update is rendered a few times,
//! not once per event. LIMIT bounds every wait, so churn that never goes
//! quiet still renders.

use std::time::Duration;

use tokio::time::Instant;

/// Quiet after a lone change before rendering.
pub const SETTLE: Duration = Duration::from_millis(10);

/// Quiet awaited during a burst.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// A change this soon after the last render began is part of a burst.
pub const BURST: Duration = Duration::from_millis(200);

/// The longest a change waits, however busy the source.
pub const LIMIT: Duration = Duration::from_secs(1);

/// Changes not rendered yet, and when the last render began.
#[derive(Debug, Clone, Default)]
pub struct Coalescer {
    pending: Option<Pending>,
    last_render: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    first: Instant,
    last: Instant,
    /// The first change came within BURST of the last render.
    burst: bool,
}

impl Coalescer {
    /// A change at `now`.
    pub fn changed(&mut self, now: Instant) {
        let burst = self
            .last_render
            .is_some_and(|last| now.saturating_duration_since(last) < BURST);
        self.pending = Some(match self.pending {
            Some(pending) => Pending {
                last: now,
                ..pending
            },
            None => Pending {
                first: now,
                last: now,
                burst,
            },
        });
    }

    /// Whether a change waits to be rendered.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// When to render what is pending; `None` when nothing is. `holding`:
    /// the source knows its input is incomplete (a file still being
    /// written), so only LIMIT ends the wait.
    pub fn deadline(&self, holding: bool) -> Option<Instant> {
        let pending = self.pending?;
        let limit = pending.first + LIMIT;
        if holding {
            return Some(limit);
        }
        let quiet = if pending.burst { DEBOUNCE } else { SETTLE };
        Some((pending.last + quiet).min(limit))
    }

    /// A render begins at `now`: what was pending is taken.
    pub fn rendering(&mut self, now: Instant) {
        self.pending = None;
        self.last_render = Some(now);
    }
}

/// Sleeps until `deadline`; for ever without one.
pub async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn nothing_pending_has_no_deadline() {
        let coalescer = Coalescer::default();
        assert_eq!(coalescer.deadline(false), None);
        assert!(!coalescer.is_pending());
    }

    #[test]
    fn a_lone_change_renders_after_settle() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.changed(t0);
        assert_eq!(coalescer.deadline(false), Some(t0 + SETTLE));

        // Long after a render, a change is lone again.
        coalescer.rendering(t0 + SETTLE);
        coalescer.changed(t0 + SETTLE + BURST);
        assert_eq!(coalescer.deadline(false), Some(t0 + SETTLE * 2 + BURST));
    }

    #[test]
    fn events_of_one_operation_extend_the_settle() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.changed(t0);
        coalescer.changed(t0 + 5 * MS);
        assert_eq!(coalescer.deadline(false), Some(t0 + 5 * MS + SETTLE));
    }

    #[test]
    fn a_change_soon_after_a_render_waits_for_the_burst_to_go_quiet() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.rendering(t0);
        coalescer.changed(t0 + 50 * MS);
        assert_eq!(coalescer.deadline(false), Some(t0 + 50 * MS + DEBOUNCE));
    }

    #[test]
    fn churn_that_never_goes_quiet_still_renders_at_the_limit() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.rendering(t0);
        let first = t0 + MS;
        let mut now = first;
        while now < first + 2 * LIMIT {
            coalescer.changed(now);
            now += 100 * MS;
        }
        assert_eq!(coalescer.deadline(false), Some(first + LIMIT));
    }

    #[test]
    fn holding_waits_for_the_limit_only() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.changed(t0);
        assert_eq!(coalescer.deadline(true), Some(t0 + LIMIT));
    }

    #[test]
    fn rendering_takes_what_was_pending() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.changed(t0);
        coalescer.rendering(t0 + SETTLE);
        assert!(!coalescer.is_pending());
        assert_eq!(coalescer.deadline(false), None);
    }
}
