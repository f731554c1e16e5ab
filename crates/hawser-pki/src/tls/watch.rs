//! Keeping a [`SharedMaterial`] in step with its tls directory.
//!
//! ```text
//! notify (dir + its parent, non-recursive) ─┐
//! every `poll` ─────────────────────────────┴─▶ load_dir(now) ─ok, new revision─▶ swap
//!                                                             ─ok, same─────────▶ keep
//!                                                             ─error────────────▶ keep, record
//! ```
//!
//! Both directories are watched because each layout swaps a different link: a Secret
//! volume swaps `dir/..data` (an event in `dir`), a DirStore swaps `<store>/<name>` (an
//! event in the parent). The poll is the safety net for missed events, and it re-reads
//! against the clock, so an identity that expired in place shows up in the status.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tracing::Instrument;

use super::material::load_dir;
use super::shared::{Inner, SharedMaterial};
use crate::issue::Role;

/// The shortest poll period accepted; shorter ones are raised to it.
const MIN_POLL: Duration = Duration::from_millis(100);

/// Loads `dir` as `role`'s tls directory now, then keeps the returned [`SharedMaterial`]
/// current from a background task until every handle on it is dropped (or the task is
/// aborted). A failed first load leaves no material and the error recorded: the caller
/// keeps running and refuses peers until the directory becomes valid.
///
/// Must be called inside a tokio runtime.
pub fn watch_dir(
    dir: impl Into<PathBuf>,
    role: Role,
    poll: Duration,
) -> (SharedMaterial, JoinHandle<()>) {
    let dir = dir.into();
    let shared = SharedMaterial::new(dir.clone());
    // Watch before the first load, so a change made during it is not missed.
    let changed = Arc::new(Notify::new());
    let watcher = fs_watcher(&dir, Arc::clone(&changed));
    reload(&shared, role);
    let span = tracing::info_span!("tls_watch", dir = %dir.display(), role = role.as_str());
    let task = tokio::spawn(
        run(
            shared.downgrade(),
            role,
            poll.max(MIN_POLL),
            changed,
            watcher,
        )
        .instrument(span),
    );
    (shared, task)
}

async fn run(
    shared: Weak<Inner>,
    role: Role,
    poll: Duration,
    changed: Arc<Notify>,
    // Kept alive for as long as the loop runs: dropping it stops the events.
    _watcher: Option<RecommendedWatcher>,
) {
    let mut ticks = tokio::time::interval(poll);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticks.tick().await; // The first tick is immediate; `watch_dir` has just loaded.
    loop {
        tokio::select! {
            () = changed.notified() => {}
            _ = ticks.tick() => {}
        }
        let Some(shared) = SharedMaterial::upgrade(&shared) else {
            return;
        };
        reload(&shared, role);
    }
}

/// One load: a few small files, read inline rather than on the blocking pool.
fn reload(shared: &SharedMaterial, role: Role) {
    let now = SystemTime::now();
    match load_dir(shared.dir(), role, now) {
        Ok(material) => {
            shared.set(material);
        }
        Err(e) => {
            shared.record_error(&e, now);
        }
    }
}

/// A watcher that wakes `changed` on any change in `dir` or its parent; `None` (the poll
/// alone) when the platform gives no watcher.
fn fs_watcher(dir: &Path, changed: Arc<Notify>) -> Option<RecommendedWatcher> {
    let handler = move |event: notify::Result<notify::Event>| {
        // Our own reads show up as opens; reacting to them would reload forever.
        let relevant = match event {
            Ok(event) => match event.kind {
                EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
                EventKind::Access(_) => false,
                _ => true,
            },
            // An error (e.g. a queue overflow) may hide a change: look again.
            Err(_) => true,
        };
        if relevant {
            changed.notify_one();
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(watcher) => watcher,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the tls directory; relying on the poll");
            return None;
        }
    };
    let parent = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    for path in [dir, parent] {
        // A directory that does not exist yet is seen through its parent, or the poll.
        if let Err(e) = watcher.watch(path, RecursiveMode::NonRecursive) {
            tracing::debug!(path = %path.display(), error = %e, "not watching");
        }
    }
    Some(watcher)
}

#[cfg(test)]
mod tests;
