//! When a source renders after a change: at once for a lone change or the
//! rest of one operation (leading edge), coalesced during a burst (trailing
//! edge, bounded).
//!
//! ```text
//!  change ──► renders begun within BURST?
//!               none to two ──► complete?  yes ──► render at once         (leading edge)
//!                                          no  ──► render after SETTLE of quiet
//!               three       ──► render after DEBOUNCE of quiet, LIMIT after the first at most
//!  a file still being written (local) ──► hold, LIMIT after the first at most
//! ```
//!
//! A source says whether a change is complete as it stands: a file renamed
//! into place or closed after writing, an object the API server stored. A
//! lone complete change renders at once. A change that may be the first
//! event of an operation still going on (a file removed or renamed away by
//! an editor that writes it again a moment later, an Ingress whose Secret
//! is still being read) waits SETTLE of quiet, so the render does not serve
//! the half-done state: for a file, that would drop its objects for a
//! generation.
//!
//! A complete change that follows one or two renders closely is taken as
//! the rest of the same operation (a Service applied with its
//! EndpointSlice and its Ingress, their watch events a few milliseconds
//! apart) and renders at once too: every object the API server stored is a
//! state it serves, and waiting for quiet there delayed the operation's
//! route by the whole SETTLE whenever its first objects were rendered alone
//! (docs/benchmarks.md, "The rest of an operation at once"). After three
//! renders within BURST it is a burst: a `cp -r` or a rolling update is
//! rendered a few times, not once per event. LIMIT bounds every wait, so
//! churn that never goes quiet still renders.

use std::time::Duration;

use tokio::time::Instant;

/// Quiet awaited after a change that may not be complete yet.
pub const SETTLE: Duration = Duration::from_millis(10);

/// Quiet awaited during a burst.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Renders begun this shortly before a change make it the rest of an
/// operation (one or two renders) or part of a burst (three).
pub const BURST: Duration = Duration::from_millis(200);

/// The longest a change waits, however busy the source.
pub const LIMIT: Duration = Duration::from_secs(1);

/// At most this many changes already queued are taken together before a
/// source looks at its deadline again (the rest at its next turn).
pub const QUEUED_AT_ONCE: usize = 256;

/// What a source knows of a change when it sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Complete as it stands: a lone one renders at once.
    Complete,
    /// Maybe the first event of an operation still going on.
    Partial,
}

/// How many recent renders decide a change's wait.
const RENDERS_KEPT: usize = 3;

/// Changes not rendered yet, and when the last renders began (latest first).
#[derive(Debug, Clone, Default)]
pub struct Coalescer {
    pending: Option<Pending>,
    renders: [Option<Instant>; RENDERS_KEPT],
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    first: Instant,
    last: Instant,
    /// How many renders began within BURST before the first change.
    recent_renders: usize,
    /// Some change of them may not be complete yet.
    partial: bool,
}

impl Coalescer {
    /// A change at `now`.
    pub fn changed(&mut self, now: Instant, change: Change) {
        let partial = change == Change::Partial;
        let recent_renders = self
            .renders
            .iter()
            .flatten()
            .filter(|at| now.saturating_duration_since(**at) < BURST)
            .count();
        self.pending = Some(match self.pending {
            Some(pending) => Pending {
                last: now,
                partial: pending.partial || partial,
                ..pending
            },
            None => Pending {
                first: now,
                last: now,
                recent_renders,
                partial,
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
        let quiet = match pending.recent_renders {
            0..=2 if !pending.partial => Duration::ZERO,
            0..=2 => SETTLE,
            _ => DEBOUNCE,
        };
        Some((pending.last + quiet).min(limit))
    }

    /// A render begins at `now`: what was pending is taken.
    pub fn rendering(&mut self, now: Instant) {
        self.pending = None;
        self.renders.rotate_right(1);
        self.renders[0] = Some(now);
    }
}

/// Sleeps until `deadline`; for ever without one. A deadline already due
/// returns at once: the timer would round it up to its next millisecond
/// tick, and a lone change would wait for that.
pub async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) if deadline <= Instant::now() => {}
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
    fn a_lone_complete_change_renders_at_once() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.changed(t0, Change::Complete);
        assert_eq!(coalescer.deadline(false), Some(t0));

        // Long after a render, a change is lone again.
        coalescer.rendering(t0);
        coalescer.changed(t0 + BURST, Change::Complete);
        assert_eq!(coalescer.deadline(false), Some(t0 + BURST));
    }

    #[test]
    fn a_lone_partial_change_waits_for_the_settle() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.changed(t0, Change::Partial);
        assert_eq!(coalescer.deadline(false), Some(t0 + SETTLE));
        // The operation's next events extend it, complete or not.
        coalescer.changed(t0 + 5 * MS, Change::Complete);
        assert_eq!(coalescer.deadline(false), Some(t0 + 5 * MS + SETTLE));
    }

    #[test]
    fn a_complete_change_soon_after_one_render_renders_at_once() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.rendering(t0);
        coalescer.changed(t0 + 5 * MS, Change::Complete);
        assert_eq!(coalescer.deadline(false), Some(t0 + 5 * MS));

        // One that may be half done still settles.
        let mut coalescer = Coalescer::default();
        coalescer.rendering(t0);
        coalescer.changed(t0 + 5 * MS, Change::Partial);
        assert_eq!(coalescer.deadline(false), Some(t0 + 5 * MS + SETTLE));
    }

    #[test]
    fn the_third_object_of_an_operation_renders_at_once() {
        // A Service rendered, then its EndpointSlice: its Ingress comes.
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.rendering(t0);
        coalescer.rendering(t0 + 2 * MS);
        coalescer.changed(t0 + 5 * MS, Change::Complete);
        assert_eq!(coalescer.deadline(false), Some(t0 + 5 * MS));

        // One that may be half done still settles.
        let mut coalescer = Coalescer::default();
        coalescer.rendering(t0);
        coalescer.rendering(t0 + 2 * MS);
        coalescer.changed(t0 + 5 * MS, Change::Partial);
        assert_eq!(coalescer.deadline(false), Some(t0 + 5 * MS + SETTLE));
    }

    #[test]
    fn a_change_after_three_renders_within_the_burst_waits_for_it_to_go_quiet() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.rendering(t0);
        coalescer.rendering(t0 + 10 * MS);
        coalescer.rendering(t0 + 20 * MS);
        coalescer.changed(t0 + 50 * MS, Change::Complete);
        assert_eq!(coalescer.deadline(false), Some(t0 + 50 * MS + DEBOUNCE));

        // A render that began longer ago than BURST does not count.
        let mut coalescer = Coalescer::default();
        coalescer.rendering(t0);
        coalescer.rendering(t0 + BURST);
        coalescer.rendering(t0 + BURST + MS);
        coalescer.changed(t0 + BURST + 5 * MS, Change::Complete);
        assert_eq!(coalescer.deadline(false), Some(t0 + BURST + 5 * MS));
    }

    #[test]
    fn churn_that_never_goes_quiet_still_renders_at_the_limit() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        for _ in 0..RENDERS_KEPT {
            coalescer.rendering(t0);
        }
        let first = t0 + MS;
        let mut now = first;
        while now < first + 2 * LIMIT {
            coalescer.changed(now, Change::Complete);
            now += 100 * MS;
        }
        assert_eq!(coalescer.deadline(false), Some(first + LIMIT));
    }

    #[test]
    fn holding_waits_for_the_limit_only() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.changed(t0, Change::Complete);
        assert_eq!(coalescer.deadline(true), Some(t0 + LIMIT));
    }

    #[tokio::test]
    async fn a_due_deadline_needs_no_timer() {
        let due = Instant::now();
        let now = std::future::ready(());
        // Polled once: ready at once, not at the timer's next tick.
        let first =
            tokio::select! { biased; () = sleep_until(Some(due)) => true, () = now => false };
        assert!(first, "a due deadline waited for the timer");
    }

    #[test]
    fn rendering_takes_what_was_pending() {
        let t0 = Instant::now();
        let mut coalescer = Coalescer::default();
        coalescer.changed(t0, Change::Partial);
        coalescer.rendering(t0 + SETTLE);
        assert!(!coalescer.is_pending());
        assert_eq!(coalescer.deadline(false), None);
    }
}
