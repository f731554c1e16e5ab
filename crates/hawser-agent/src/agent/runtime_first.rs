//! Runtime first, with staging and the full check off the critical path.
//!
//! ```text
//!  desired version ──typed checks──► runtime commands ──► traffic sees the change
//!   (policy on haproxy.cfg,          │ failed: stage, full check, then reload
//!    add-server keywords,            ▼
//!    in memory)            settle: the change's first requests are served
//!                          (20 ms)
//!                                    ▼
//!                          stage the tree (write, fsync)
//!                            failed ──► runtime change undone, rejected
//!                          full check (`haproxy -c`) of the staged tree
//!                            ok ──► `current` and `lkg` move to it
//!                            refused ──► runtime change undone, `current` never moved, rejected
//!
//!  a newer version comes during the settle, staging or check:
//!    the check is left to it (its tree holds this change too), and the newer
//!    version is applied at once; `current` stays on the checked version.
//!    A staging is given up (it runs on a blocking thread, and stops at its
//!    next file, leaving nothing), a check killed.
//!    If the newer version is refused, the tree of what runs is checked on
//!    its own (passed: it becomes `current`; refused: HAProxy goes back to
//!    the checked version)
//! ```
//!
//! Why HAProxy still never loads a tree that was not checked
//! (docs/agent.md, "Runtime first"): runtime commands change live state
//! only, never what a reload or a restart loads. What they change is checked
//! by hawser before it is sent: server addresses are IP addresses and ports,
//! keywords single words that the config policy allows on a server line,
//! map entries and certificates are what the desired version (whose
//! configuration passed the policy) holds. `current` names the new tree
//! only once it is on disk and `haproxy -c` passed on it, so a reload or
//! restart in between loads the old, checked tree (and the agent applies
//! the new version again).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Arc;

use hawser_haproxy::{StagedTreeError, TreeFiles};
use hawser_plan::{CONFIG_PATH, FileSet};
use tokio::sync::watch;
use tokio::time::{Duration, Instant};
use tracing::{info, warn};

use super::{Core, Desired, Phases, Running, Unchecked, apply_error::ApplyError};
use crate::diff::{Decision, RuntimeOp, certificate_renewals_alone, decide, server_changes_alone};
use crate::runtime_ops::{self, describe};
use crate::tree::VersionName;

/// The files whose configuration last passed the config policy in this
/// process, before a runtime change, and every other file the policy read
/// for its lines (crt-lists, Lua). While those files stay the same, a
/// configuration is judged by the lines that differ from it alone: a
/// change of servers is a few lines of thousands (at thousands of routes,
/// judging them all was a millisecond of a change's time to traffic), and
/// a change of map entries alone changes no line.
pub(super) struct PolicyPassed {
    files: Arc<FileSet>,
    read: BTreeSet<String>,
}

impl PolicyPassed {
    /// The configuration that passed, when `files` has the same files it
    /// read.
    fn config_for(&self, files: &FileSet) -> Option<&[u8]> {
        let same = |path: &String| self.files.get(path) == files.get(path);
        self.read.iter().all(same).then(|| {
            let config = self.files.get(CONFIG_PATH);
            config.map_or(&[][..], |file| file.content.as_slice())
        })
    }
}

/// How far below hawser's own CPU priority a check runs that nothing waits
/// for (`nice` steps): the full check after a runtime change is a
/// HAProxy parsing thousands of routes, and the first requests of the
/// change, on the same CPUs, should not wait for it.
const BACKGROUND_CHECK_NICENESS: i32 = 10;

/// How long the staging and full check of a runtime change wait once the
/// change is live. Both take the same two CPUs the change's first requests
/// need (writing and syncing the tree; `haproxy -c` parsing thousands of
/// routes, if below traffic), and HAProxy answered sooner when they waited:
/// measured at 3,000 routes under load (docs/benchmarks.md, "Server
/// commands in one session, a settle before the staging"), the median first
/// answer of a change came 8 to 23 % sooner, where one request takes 2 to
/// 3 ms. Nothing waits on them but `current` (which keeps naming the
/// checked tree until then) and the next version, which ends the wait at
/// once.
const SETTLE_AFTER_CHANGE: Duration = Duration::from_millis(20);

/// How long runtime changes may stay live without a full check of their
/// tree while newer versions keep coming: past it, the next check is made
/// to its end (and a newer version waits for it), so that `current` keeps
/// up with what HAProxy serves in a stream of changes too.
const UNCHECKED_AT_MOST: Duration = Duration::from_secs(1);

/// Waits until a version newer than the one being applied is submitted (or
/// the agent stops).
async fn newer_version(newer: &watch::Receiver<Option<Arc<Desired>>>) {
    // A clone, so that waking up does not mark the newer version seen.
    let mut wake = newer.clone();
    let _ = wake.changed().await;
}

/// Runs `step` unless a newer version comes first (`None` then).
pub(super) async fn unless_newer<T>(
    newer: &watch::Receiver<Option<Arc<Desired>>>,
    step: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        done = step => Some(done),
        () = newer_version(newer) => None,
    }
}

/// Whether anything waits for the full check of a staged version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Awaited {
    /// A reload that loads the version: the check runs at hawser's own
    /// CPU priority.
    ByReload,
    /// Nothing: the change is live already (or there is none), and the
    /// check only decides whether `current` may name the version. It runs
    /// below traffic.
    ByNothing,
}

/// How a runtime apply ended, when nothing was refused.
pub(super) enum AtRuntime {
    /// Applied, staged, checked and published: what the operations did.
    Applied(String),
    /// Applied; a newer version came before the full check of its tree
    /// ended, and the check is left to that version: what the operations
    /// did.
    CheckLeftToNewer(String),
    /// An operation failed; the staged and checked `version` must be loaded
    /// by a reload, for this reason.
    ReloadInstead {
        version: VersionName,
        reason: String,
    },
}

impl Core {
    /// The full check of a staged version: the config policy, `haproxy -c`
    /// and the checks it does not make.
    pub(super) async fn check_version(
        &self,
        version: VersionName,
        desired: &Desired,
        phases: &mut Phases,
        awaited: Awaited,
    ) -> Result<(), ApplyError> {
        let began = Instant::now();
        let config_text = desired.files.text(CONFIG_PATH).unwrap_or_default();
        let below_traffic;
        let haproxy = match awaited {
            Awaited::ByReload => &self.config.haproxy,
            Awaited::ByNothing => {
                below_traffic =
                    (self.config.haproxy.clone()).with_check_niceness(BACKGROUND_CHECK_NICENESS);
                &below_traffic
            }
        };
        let result = haproxy
            .check_staged_tree(
                &self.config.paths.config_policy(),
                &self.tree.version_path(version),
                CONFIG_PATH,
                config_text,
            )
            .await;
        phases.check += began.elapsed();
        result.map(drop).map_err(ApplyError::from)
    }

    /// Applies `ops` to the running HAProxy, lets the change's first
    /// requests through ([`SETTLE_AFTER_CHANGE`]), then stages the version,
    /// checks it fully and moves `current` and `lkg` to it. A `newer`
    /// version coming meanwhile takes that check over (see
    /// [`Core::leave_check_to_newer`]).
    pub(super) async fn apply_at_runtime(
        &mut self,
        desired: &Desired,
        ops: &[RuntimeOp],
        newer: &watch::Receiver<Option<Arc<Desired>>>,
        phases: &mut Phases,
    ) -> Result<AtRuntime, ApplyError> {
        self.check_runtime_ops(desired, ops)?;
        let changing = Instant::now();
        phases.until_change = Some(changing - phases.began);
        let executed = runtime_ops::execute(
            &self.runtime,
            ops,
            &desired.files,
            &desired.plan,
            &mut self.live_copies,
        )
        .await;
        phases.change = changing.elapsed();
        let summary = || ops.iter().map(describe).collect::<Vec<_>>().join(", ");
        let may_leave = self.may_leave_check();
        if executed.is_ok() {
            self.status.send_modify(|s| {
                s.runtime_ops += ops.len() as u64;
                s.live_generation = Some(desired.generation);
            });
            let settling = Instant::now();
            let settled = unless_newer(newer, tokio::time::sleep(SETTLE_AFTER_CHANGE)).await;
            phases.settle = settling.elapsed();
            if settled.is_none() && may_leave {
                self.leave_check_to_newer(desired);
                return Ok(AtRuntime::CheckLeftToNewer(summary()));
            }
        }
        // A change that failed at runtime is staged to the end: the reload
        // that makes it needs the tree.
        let staged = if executed.is_ok() && may_leave {
            self.stage_unless_newer(desired, newer, phases).await
        } else {
            self.stage_timed(desired, phases).await.map(Some)
        };
        let version = match staged {
            Ok(Some(version)) => version,
            Ok(None) => {
                self.leave_check_to_newer(desired);
                return Ok(AtRuntime::CheckLeftToNewer(summary()));
            }
            Err(unstaged) => {
                warn!("the version of a runtime change cannot be staged ({unstaged}); undoing it");
                self.undo(desired).await;
                return Err(unstaged);
            }
        };
        if let Err(e) = executed {
            if e.is_unanswered() || e.is_denied() {
                // A stalled socket stays stalled across a reload, which is
                // verified through it, and so does one that refuses this
                // process access: a reload would only wait longer. What
                // went through is put right when the version is tried
                // again (or by drift repair). A socket that is not there
                // at all (refused) is one a reload brings back.
                return Err(ApplyError::Unanswered(e));
            }
            warn!("runtime change failed ({e}); reloading instead");
            self.check_version(version, desired, phases, Awaited::ByReload)
                .await?;
            let reason = format!("runtime change failed: {e}");
            return Ok(AtRuntime::ReloadInstead { version, reason });
        }
        let checking = self.check_version(version, desired, phases, Awaited::ByNothing);
        let checked = if may_leave {
            unless_newer(newer, checking).await
        } else {
            Some(checking.await)
        };
        let Some(checked) = checked else {
            // The check ended with its future: `haproxy -c` is killed.
            self.leave_check_to_newer(desired);
            return Ok(AtRuntime::CheckLeftToNewer(summary()));
        };
        if let Err(refused) = checked {
            warn!("the full check refuses the tree of a runtime change ({refused}); undoing it");
            self.undo(desired).await;
            return Err(refused);
        }
        self.publish_good(version, desired)?;
        Ok(AtRuntime::Applied(summary()))
    }

    /// Whether a newer version may take over the full check of this one:
    /// while no change has been left unchecked for [`UNCHECKED_AT_MOST`].
    fn may_leave_check(&self) -> bool {
        (self.unchecked.as_ref()).is_none_or(|u| u.since.elapsed() < UNCHECKED_AT_MOST)
    }

    /// `desired`, live, is what HAProxy runs; its tree is checked with the
    /// newer version's, which holds it too. `current` keeps naming the last
    /// checked version, which a refused check takes HAProxy back to.
    fn leave_check_to_newer(&mut self, desired: &Desired) {
        if self.unchecked.is_none() {
            self.unchecked = Some(Unchecked {
                checked: self.running.clone(),
                since: Instant::now(),
            });
        }
        self.set_running(Running::of(desired));
    }

    /// After a version was refused while runtime changes left unchecked are
    /// live: checks the tree of what runs now, and takes HAProxy back to the
    /// last checked version if it is refused.
    pub(super) async fn check_what_runs(&mut self) {
        if self.unchecked.is_none() {
            return;
        }
        let running = self.running.as_desired();
        let generation = running.generation.get();
        let mut phases = Phases::beginning(Instant::now());
        let checked = match self.stage_timed(&running, &mut phases).await {
            Ok(version) => self
                .check_version(version, &running, &mut phases, Awaited::ByNothing)
                .await
                .and_then(|()| self.publish_good(version, &running)),
            Err(unstaged) => Err(unstaged),
        };
        match checked {
            Ok(()) => info!(generation, "the full check of the running version passed"),
            Err(refused) => {
                warn!(
                    generation,
                    "the full check refuses the running version ({refused}); undoing its runtime changes"
                );
                if let Some(unchecked) = self.unchecked.take() {
                    self.set_running(unchecked.checked);
                }
                self.undo(&running).await;
                self.publish_running();
            }
        }
    }

    /// hawser's own checks of what runtime commands will change, made in
    /// memory before any is sent: the desired configuration passes the
    /// config policy, and every server added carries only keywords it
    /// allows.
    fn check_runtime_ops(
        &mut self,
        desired: &Desired,
        ops: &[RuntimeOp],
    ) -> Result<(), ApplyError> {
        let policy = self.config.paths.config_policy();
        let files = |relative: &str| desired.files.get(relative).map(|f| f.content.clone());
        let refused = |e| ApplyError::Check(StagedTreeError::Refused(e));
        let read = RefCell::new(BTreeSet::new());
        let recorded = |relative: &str| {
            read.borrow_mut().insert(relative.to_string());
            files(relative)
        };
        let config = desired.files.get(CONFIG_PATH);
        let config = config.map_or(&[][..], |file| file.content.as_slice());
        // Judged by the lines that differ from what passed last, while the
        // files its lines read are the same.
        let passed = self.policy_passed.as_ref();
        let before = passed.and_then(|passed| passed.config_for(&desired.files));
        match before {
            Some(before) => policy.check_config_change(before, config, &recorded as &dyn TreeFiles),
            None => policy.check_config(config, &recorded as &dyn TreeFiles),
        }
        .map_err(refused)?;
        let mut read = read.into_inner();
        if let (Some(_), Some(passed)) = (before, passed) {
            read.extend(passed.read.iter().cloned());
        }
        self.policy_passed = Some(PolicyPassed {
            files: Arc::clone(&desired.files),
            read,
        });
        for op in ops {
            if let RuntimeOp::AddServer { backend, server } = op {
                let line = format!(
                    "backend {backend}\n    server {} {}:{} {}\n",
                    server.name,
                    server.address,
                    server.port,
                    server.keywords.join(" ")
                );
                policy
                    .check_config(line.as_bytes(), &files as &dyn TreeFiles)
                    .map_err(refused)?;
            }
        }
        Ok(())
    }

    /// While a reload waits for its slot, changes at runtime already what
    /// needs none: the servers of the backends both versions declare alike
    /// ([`server_changes_alone`]) and the certificates renewed in place
    /// ([`certificate_renewals_alone`]), so neither endpoint churn nor a
    /// renewal waits behind a reload. The running version follows, so that
    /// what is decided next starts from what HAProxy serves; the reload
    /// brings the rest. `desired` passed the full check already (its server
    /// lines and certificates included), so nothing is checked again here.
    pub(super) async fn change_at_runtime_while_waiting(&mut self, desired: &Desired) {
        let ops: Vec<RuntimeOp> = certificate_renewals_alone(self.running.view(), desired.view())
            .into_iter()
            .chain(server_changes_alone(&self.running.plan, &desired.plan))
            .collect();
        if ops.is_empty() {
            return;
        }
        let executed = runtime_ops::execute(
            &self.runtime,
            &ops,
            &desired.files,
            &desired.plan,
            &mut self.live_copies,
        )
        .await;
        if let Err(e) = executed {
            warn!("changing at runtime while a reload waits failed ({e}); the reload will");
            return;
        }
        self.status
            .send_modify(|s| s.runtime_ops += ops.len() as u64);
        self.follow(desired, &ops);
        let summary = ops.iter().map(describe).collect::<Vec<_>>().join(", ");
        info!("applied while a reload waits for its slot: {summary}");
    }

    /// The running version after `ops`, taken from `desired`, were applied.
    fn follow(&mut self, desired: &Desired, ops: &[RuntimeOp]) {
        let changed: BTreeSet<&str> = ops.iter().filter_map(RuntimeOp::backend).collect();
        for backend in &mut Arc::make_mut(&mut self.running.plan).backends {
            if !changed.contains(backend.name.as_str()) {
                continue;
            }
            if let Some(now) = desired
                .plan
                .backends
                .iter()
                .find(|b| b.name == backend.name)
            {
                Arc::make_mut(backend).servers.clone_from(&now.servers);
            }
        }
        for op in ops {
            if let RuntimeOp::UpdateCertificate { path } = op
                && let Some(file) = desired.files.get(path)
            {
                Arc::make_mut(&mut self.running.files).insert(
                    path.clone(),
                    file.kind,
                    file.content.clone(),
                );
                let renewed = desired.plan.certificates.iter().find(|c| &c.path == path);
                let held = Arc::make_mut(&mut self.running.plan)
                    .certificates
                    .iter_mut()
                    .find(|c| &c.path == path);
                if let (Some(renewed), Some(held)) = (renewed, held) {
                    held.clone_from(renewed);
                }
            }
        }
    }

    /// Takes HAProxy back to the running version after a runtime change to
    /// `desired`: by runtime commands, or by reloading `current` (which
    /// names the running version, or the last checked one while a change is
    /// left unchecked: drift repair then brings the running one back).
    async fn undo(&mut self, desired: &Desired) {
        if let Decision::Runtime(ops) = decide(desired.view(), self.running.view()) {
            let undone = runtime_ops::execute(
                &self.runtime,
                &ops,
                &self.running.files,
                &self.running.plan,
                &mut self.live_copies,
            )
            .await;
            match undone {
                Ok(()) => return,
                Err(e) => warn!("undoing the runtime change failed ({e}); reloading"),
            }
        }
        if let Err(e) = self.reload_current().await {
            warn!("reload of the running version failed: {e}");
        }
        self.repair_drift().await;
    }
}

#[cfg(test)]
mod tests;
