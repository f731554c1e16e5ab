//! The agent: one task that owns HAProxy's configuration and applies the
//! newest desired version, one at a time.
//!
//! ```text
//!  submit(desired) ──watch (latest wins)──► applier task ──► stage, decide
//!                                             │   ▲            runtime ops, then full check (runtime_first)
//!                                             │   │            | full check, paced reload + verify
//!                  drift timer ───────────────┤   │            lkg / roll back
//!                  HAProxy master exits ──────┘   └── status (watch), outcomes (broadcast)
//! ```
//!
//! Bursts coalesce: while a version is applied, newer submissions replace each
//! other and only the newest is applied next. Reloads are paced by
//! `min_reload_interval`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hawser_haproxy::{HaproxyBinary, MasterCli, RuntimeApi};
use hawser_plan::{CONFIG_PATH, FileSet, Plan};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{Instrument as _, info, warn};

use crate::bootstrap::{BOOTSTRAP_GENERATION, bootstrap};
use crate::diff::{Decision, VersionView, decide};
use crate::drift;
use crate::paths::AgentPaths;
use crate::process::{HaproxyLayout, ProcessError, Started, Supervisor};
use crate::reload::Reloader;
use crate::runtime_ops::{self, LiveCopies, describe};
use crate::served::ServedBackends;
use crate::status::{AgentStatus, ApplyKind, ApplyOutcome, Phase};
use crate::tree::{TreeError, TreeStore, VersionName};
use hawser_plan::Generation;

mod apply_error;
mod retry;
mod runtime_first;
mod stage;

use apply_error::ApplyError;
use retry::Retry;
use runtime_first::{AtRuntime, Awaited, PolicyPassed};

/// One rendered version to apply. Its files and plan are shared (with the
/// render that made them, and with the running version once applied),
/// never copied.
#[derive(Debug, Clone)]
pub struct Desired {
    pub generation: Generation,
    pub files: Arc<FileSet>,
    pub plan: Arc<Plan>,
}

impl Desired {
    /// The version as the diff sees it.
    pub fn view(&self) -> VersionView<'_> {
        VersionView {
            plan: &self.plan,
            files: &self.files,
        }
    }
}

/// Who runs HAProxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaproxyMode {
    /// The agent starts HAProxy itself (adopting one a crash left running) and
    /// restarts it on the last good version if its master exits.
    Spawn,
    /// Someone else runs HAProxy (another container in the pod) with
    /// `-W -S <state>/run/master.sock -C <state>/tree/current -f haproxy.cfg`;
    /// the agent stages the bootstrap version for it to boot, waits for its
    /// master CLI, and drives it through its sockets.
    Attach,
}

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub paths: AgentPaths,
    pub haproxy: HaproxyBinary,
    pub mode: HaproxyMode,
    /// The health listener (probed after every reload), as the rendered
    /// configuration binds it; the bootstrap configuration answers 503 there.
    pub health: Option<SocketAddr>,
    /// At least this long between two reloads; runtime changes are not paced.
    pub min_reload_interval: Duration,
    /// How often live state is compared with the applied version.
    pub drift_interval: Duration,
    /// Unreferenced versions kept for forensics.
    pub keep_versions: usize,
    /// How long HAProxy may drain on shutdown.
    pub stop_grace: Duration,
}

impl AgentConfig {
    pub fn new(paths: AgentPaths, haproxy: HaproxyBinary) -> Self {
        AgentConfig {
            paths,
            haproxy,
            mode: HaproxyMode::Spawn,
            health: None,
            min_reload_interval: Duration::from_secs(1),
            drift_interval: Duration::from_secs(30),
            keep_versions: 3,
            stop_grace: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("cannot start HAProxy: {0}")]
    Process(#[from] ProcessError),
    #[error("cannot create {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl AgentError {
    pub fn metric_label(&self) -> &'static str {
        match self {
            AgentError::Tree(e) => e.metric_label(),
            AgentError::Process(e) => e.metric_label(),
            AgentError::Io { .. } => "io",
        }
    }
}

/// How callers talk to a running agent.
#[derive(Debug, Clone)]
pub struct AgentHandle {
    desired: Arc<watch::Sender<Option<Arc<Desired>>>>,
    next_generation: Generation,
    status: watch::Receiver<AgentStatus>,
    outcomes: broadcast::Sender<ApplyOutcome>,
    served: watch::Receiver<Arc<ServedBackends>>,
    runtime: RuntimeApi,
    master: MasterCli,
}

impl AgentHandle {
    /// Hands over a desired version; a newer one replaces it if it was not started yet.
    pub fn submit(&self, desired: Desired) {
        self.desired.send_replace(Some(Arc::new(desired)));
    }

    pub fn status(&self) -> watch::Receiver<AgentStatus> {
        self.status.clone()
    }

    /// What the served version's backends stand for (see [`ServedBackends`]).
    pub fn served(&self) -> Arc<ServedBackends> {
        Arc::clone(&self.served.borrow())
    }

    /// HAProxy's worker stats socket, for reading its counters.
    pub fn runtime(&self) -> &RuntimeApi {
        &self.runtime
    }

    /// HAProxy's master CLI, for reading its processes.
    pub fn master(&self) -> &MasterCli {
        &self.master
    }

    /// Resolves when the agent's apply loop has ended: after
    /// [`Agent::shutdown`], or (a bug) on its own, when nothing would apply
    /// what is submitted any more. A command running the agent treats an
    /// end before its own stop as fatal.
    pub fn ended(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut status = self.status.clone();
        async move { while status.changed().await.is_ok() {} }
    }

    /// The first generation number newer than every version on disk when the
    /// agent started; sources number their renders from it.
    pub fn next_generation(&self) -> Generation {
        self.next_generation
    }

    /// Every apply's outcome, as it happens.
    pub fn outcomes(&self) -> broadcast::Receiver<ApplyOutcome> {
        self.outcomes.subscribe()
    }
}

pub struct Agent {
    handle: AgentHandle,
    stop: watch::Sender<bool>,
    task: JoinHandle<Option<Supervisor>>,
    stop_grace: Duration,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("handle", &self.handle)
            .finish()
    }
}

/// What HAProxy runs, as the agent knows it.
#[derive(Clone)]
struct Running {
    generation: Generation,
    files: Arc<FileSet>,
    plan: Arc<Plan>,
}

impl Running {
    fn of(desired: &Desired) -> Running {
        Running {
            generation: desired.generation,
            files: Arc::clone(&desired.files),
            plan: Arc::clone(&desired.plan),
        }
    }

    fn view(&self) -> VersionView<'_> {
        VersionView {
            plan: &self.plan,
            files: &self.files,
        }
    }

    /// The running version as a version to stage and check.
    fn as_desired(&self) -> Desired {
        Desired {
            generation: self.generation,
            files: Arc::clone(&self.files),
            plan: Arc::clone(&self.plan),
        }
    }
}

/// Runtime changes live whose tree no full check passed yet: a newer
/// version came while one was checked, and the check was left to it
/// (`runtime_first`, "the check left to a newer version").
struct Unchecked {
    /// The last version whose tree passed the full check: what `current`
    /// names, and what a refused check takes HAProxy back to.
    checked: Running,
    /// When the first of those changes was left unchecked.
    since: Instant,
}

/// Where one apply's time went, for its log line: staging the tree (files
/// written and synced), checking it (policy and `haproxy -c`), and changing
/// HAProxy (runtime commands, or the reload after its pacing); and, for a
/// change at runtime, how long after the version arrived its commands began
/// (the diff and hawser's typed checks: what a change waits for inside the
/// agent before traffic can see it).
#[derive(Debug)]
struct Phases {
    /// After a runtime change, before its staging
    /// (`runtime_first::SETTLE_AFTER_CHANGE`).
    settle: Duration,
    stage: Duration,
    check: Duration,
    change: Duration,
    until_change: Option<Duration>,
    /// When the apply began.
    began: Instant,
}

impl Phases {
    fn beginning(at: Instant) -> Phases {
        Phases {
            settle: Duration::ZERO,
            stage: Duration::ZERO,
            check: Duration::ZERO,
            change: Duration::ZERO,
            until_change: None,
            began: at,
        }
    }
}

struct Core {
    config: AgentConfig,
    tree: TreeStore,
    runtime: RuntimeApi,
    reloader: Reloader,
    running: Running,
    /// Set while `running` is ahead of the last checked version.
    unchecked: Option<Unchecked>,
    /// What last passed the config policy before a runtime change.
    policy_passed: Option<PolicyPassed>,
    /// Which copy of each twinned map the running worker reads.
    live_copies: LiveCopies,
    served: watch::Sender<Arc<ServedBackends>>,
    last_reload: Option<Instant>,
    status: watch::Sender<AgentStatus>,
    outcomes: broadcast::Sender<ApplyOutcome>,
}

impl Agent {
    /// Opens the state directory, recovers from whatever a crash left, and
    /// starts (or adopts) HAProxy on the last good version.
    pub async fn start(config: AgentConfig) -> Result<Agent, AgentError> {
        let paths = config.paths.clone();
        for dir in [paths.run(), paths.tree()] {
            std::fs::create_dir_all(&dir).map_err(|source| AgentError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let tree = TreeStore::open(paths.tree())?;
        let (status, status_rx) = watch::channel(AgentStatus::starting());
        let (outcomes, _) = broadcast::channel(64);
        let boot = boot_version(&tree, &config)?;
        let layout = HaproxyLayout {
            run_dir: paths.run(),
            config_dir: tree.current_path(),
            config_file: CONFIG_PATH.to_string(),
        };
        let runtime = RuntimeApi::new(paths.runtime_socket());
        let reloader = Reloader {
            master: MasterCli::new(paths.master_socket()),
            runtime: runtime.clone(),
            probe: config.health,
        };
        let (supervisor, started) = match config.mode {
            HaproxyMode::Spawn => {
                let (supervisor, started) = start_haproxy(&config, &tree, layout).await?;
                (Some(supervisor), started)
            }
            HaproxyMode::Attach => {
                wait_for_master(&reloader.master).await;
                (None, Started::Adopted)
            }
        };
        let next_generation = tree
            .versions()?
            .last()
            .map_or(Generation::new(1), |v| v.generation().next())
            .max(Generation::new(1));
        let current = tree.current().unwrap_or(boot);
        let (files, plan) = tree.read(current)?;
        let (served, served_rx) = watch::channel(Arc::new(ServedBackends::of(&plan)));
        let master = reloader.master.clone();
        let core_runtime = runtime.clone();
        let mut core = Core {
            config: config.clone(),
            tree,
            runtime,
            reloader,
            running: Running {
                generation: current.generation(),
                files: files.into(),
                plan: plan.into(),
            },
            unchecked: None,
            policy_passed: None,
            live_copies: LiveCopies::default(),
            served,
            last_reload: None,
            status,
            outcomes: outcomes.clone(),
        };
        core.recover(started).await;

        let (desired_tx, desired_rx) = watch::channel(None);
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(
            core.run(supervisor, desired_rx, stop_rx)
                .instrument(tracing::info_span!("agent_apply")),
        );
        Ok(Agent {
            handle: AgentHandle {
                desired: Arc::new(desired_tx),
                next_generation,
                status: status_rx,
                outcomes,
                served: served_rx,
                runtime: core_runtime,
                master,
            },
            stop,
            task,
            stop_grace: config.stop_grace,
        })
    }

    pub fn handle(&self) -> AgentHandle {
        self.handle.clone()
    }

    /// Stops applying and stops HAProxy gracefully.
    pub async fn shutdown(self) -> Result<(), AgentError> {
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(Some(supervisor)) => supervisor
                .stop(self.stop_grace)
                .await
                .map_err(AgentError::from),
            // Attached: HAProxy belongs to whoever started it.
            Ok(None) => Ok(()),
            Err(e) => {
                warn!("agent task ended abnormally: {e}");
                Ok(())
            }
        }
    }
}

/// The version HAProxy should boot: `current` if intact, else `lkg`, else
/// the bootstrap configuration.
fn boot_version(tree: &TreeStore, config: &AgentConfig) -> Result<VersionName, AgentError> {
    if let Some(current) = tree.current() {
        match tree.verify(current) {
            Ok(_) => return Ok(current),
            Err(e) => warn!("{e}; falling back to the last good version"),
        }
    }
    if let Some(lkg) = tree.lkg()
        && tree.verify(lkg).is_ok()
    {
        tree.publish(lkg)?;
        return Ok(lkg);
    }
    let version = stage_bootstrap(tree, config)?;
    tree.publish(version)?;
    tree.mark_good(version)?;
    Ok(version)
}

/// Starts or adopts HAProxy. A version that cannot start is abandoned for
/// `lkg`, then for the bootstrap configuration.
async fn start_haproxy(
    config: &AgentConfig,
    tree: &TreeStore,
    layout: HaproxyLayout,
) -> Result<(Supervisor, Started), AgentError> {
    loop {
        match Supervisor::start(&config.haproxy, layout.clone()).await {
            Ok(started) => return Ok(started),
            Err(e @ ProcessError::ExitedDuringStart { .. }) => {
                let current = tree.current();
                let fallback = match tree.lkg() {
                    Some(lkg) if Some(lkg) != current => lkg,
                    _ if current.map(VersionName::generation) != Some(BOOTSTRAP_GENERATION) => {
                        stage_bootstrap(tree, config)?
                    }
                    _ => return Err(e.into()),
                };
                warn!("HAProxy cannot start on {current:?}: {e}; starting {fallback} instead");
                tree.publish(fallback)?;
                tree.mark_good(fallback)?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The supervised master's exit; never, when attached.
async fn wait_exit(supervisor: &mut Option<Supervisor>) -> crate::process::ExitInfo {
    match supervisor {
        Some(supervisor) => supervisor.wait_exit().await,
        None => std::future::pending().await,
    }
}

/// Attached: waits, as long as it takes, for HAProxy's master CLI to answer
/// with a worker (the other container may start later than the agent).
async fn wait_for_master(master: &MasterCli) {
    let mut attempts: u64 = 0;
    loop {
        if master
            .show_proc()
            .await
            .is_ok_and(|t| !t.workers.is_empty())
        {
            return;
        }
        if attempts.is_multiple_of(50) {
            info!(
                "waiting for HAProxy's master CLI at {}",
                master.socket().display()
            );
        }
        attempts += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Writes the bootstrap configuration as generation 0.
fn stage_bootstrap(tree: &TreeStore, config: &AgentConfig) -> Result<VersionName, AgentError> {
    let (files, plan) = bootstrap(&config.paths, config.health);
    Ok(tree.stage(BOOTSTRAP_GENERATION, &files, &plan)?)
}

impl Core {
    async fn run(
        mut self,
        mut supervisor: Option<Supervisor>,
        mut desired: watch::Receiver<Option<Arc<Desired>>>,
        mut stop: watch::Receiver<bool>,
    ) -> Option<Supervisor> {
        let mut drift = tokio::time::interval(self.config.drift_interval);
        drift.tick().await;
        let mut retry = Retry::default();
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                changed = desired.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let next = desired.borrow_and_update().clone();
                    retry.clear();
                    if let Some(next) = next {
                        self.apply(next, &mut desired, &mut retry).await;
                    }
                }
                again = retry.due(), if retry.is_pending() => {
                    // A newer version replaces it: the next turn applies that.
                    if desired.has_changed().unwrap_or(false) {
                        retry.clear();
                        continue;
                    }
                    info!(generation = again.generation.get(), "trying the version again");
                    self.apply(again, &mut desired, &mut retry).await;
                }
                _ = drift.tick() => self.repair_drift().await,
                exit = wait_exit(&mut supervisor) => {
                    warn!("HAProxy master exited ({exit:?}); restarting on the last good version");
                    if let Some(supervisor) = supervisor.as_mut() {
                        self.restart(supervisor).await;
                    }
                }
            }
        }
        self.set_phase(Phase::Draining);
        supervisor
    }

    /// After a start: put HAProxy in a known state and report it.
    async fn recover(&mut self, started: Started) {
        let current = self.tree.current();
        if started == Started::Adopted && current != self.tree.lkg() {
            // A crash interrupted an apply: HAProxy may run the old or the new
            // version. Reloading `current` (already checked) makes it known.
            info!("adopted HAProxy; reloading {current:?} to converge after an interrupted apply");
            if let Err(e) = self.reload_current().await {
                warn!("reload after adoption failed: {e}; rolling back");
                self.roll_back_and_reload().await;
            }
        }
        if let Some(current) = self.tree.current() {
            let _ = self.tree.mark_loaded(current);
        }
        match self.runtime.abort_open_transaction().await {
            Ok(Some(path)) => warn!("aborted an SSL transaction left open for {path}"),
            Ok(None) => {}
            Err(e) => warn!("cannot look for open SSL transactions: {e}"),
        }
        self.repair_drift().await;
        self.publish_running();
    }

    fn publish_running(&self) {
        self.status.send_modify(|s| self.write_running(s));
    }

    /// The running version's phase and generation, into `status`.
    fn write_running(&self, status: &mut AgentStatus) {
        let bootstrap = self.running.generation == BOOTSTRAP_GENERATION;
        status.phase = if bootstrap {
            Phase::Bootstrap
        } else {
            Phase::Serving
        };
        status.applied_generation = (!bootstrap).then_some(self.running.generation);
    }

    fn set_phase(&self, phase: Phase) {
        self.status.send_modify(|s| s.phase = phase);
    }

    /// Applies `desired`; when it fails for a reason not its own, schedules
    /// it in `retry` (and says so in the same status update).
    async fn apply(
        &mut self,
        desired: Arc<Desired>,
        newer: &mut watch::Receiver<Option<Arc<Desired>>>,
        retry: &mut Retry,
    ) {
        let started = Instant::now();
        self.status
            .send_modify(|s| s.desired_generation = Some(desired.generation));
        let mut phases = Phases::beginning(started);
        let result = self.try_apply(&desired, newer, &mut phases).await;
        let (kind, summary, error) = match result {
            Ok(Some((kind, summary))) => {
                retry.clear();
                (kind, summary, None)
            }
            Ok(None) => return, // superseded by a newer version before anything changed
            Err(error) => {
                warn!(
                    generation = desired.generation.get(),
                    reason = error.metric_label(),
                    "rejected: {error}"
                );
                self.check_what_runs().await;
                let mut said = error.to_string();
                if error.is_transient() {
                    retry.schedule(Arc::clone(&desired));
                    let wait = retry.wait().unwrap_or_default().as_secs();
                    warn!("the failure is not the version's own: trying it again in {wait} s");
                    said.push_str(&format!(" (trying again in {wait} s)"));
                } else {
                    retry.clear();
                }
                (ApplyKind::Rejected, String::new(), Some(said))
            }
        };
        let outcome = ApplyOutcome {
            generation: desired.generation,
            kind,
            duration: started.elapsed(),
            summary,
            error: error.clone(),
        };
        if error.is_none() {
            info!(
                generation = desired.generation.get(),
                kind = ?kind,
                ms = outcome.duration.as_millis() as u64,
                settle_ms = phases.settle.as_millis() as u64,
                stage_ms = phases.stage.as_millis() as u64,
                check_ms = phases.check.as_millis() as u64,
                change_ms = phases.change.as_millis() as u64,
                until_change_ms = phases.until_change.map(|d| d.as_millis() as u64),
                "applied: {}",
                outcome.summary
            );
        }
        // One update: whoever sees the outcome sees the generation it left
        // running.
        self.status.send_modify(|s| {
            if kind == ApplyKind::Rejected {
                s.rejected += 1;
                s.last_error = error.clone();
            } else {
                s.last_error = None;
            }
            s.last_outcome = Some(outcome.clone());
            s.recent_outcomes.push(outcome.clone());
            if error.is_none() {
                self.write_running(s);
            }
        });
        let _ = self.outcomes.send(outcome);
        if let Err(e) = self.tree.collect_garbage(self.config.keep_versions) {
            warn!("cannot remove old versions: {e}");
        }
    }

    /// `Ok(None)` when a newer version arrived while waiting to reload.
    async fn try_apply(
        &mut self,
        desired: &Desired,
        newer: &mut watch::Receiver<Option<Arc<Desired>>>,
        phases: &mut Phases,
    ) -> Result<Option<(ApplyKind, String)>, ApplyError> {
        let (version, reasons) = match decide(self.running.view(), desired.view()) {
            Decision::NoOp => {
                let version = self.stage_timed(desired, phases).await?;
                self.check_version(version, desired, phases, Awaited::ByNothing)
                    .await?;
                self.publish_good(version, desired)?;
                return Ok(Some((
                    ApplyKind::NoOp,
                    "nothing HAProxy serves changed".to_string(),
                )));
            }
            Decision::Runtime(ops) => {
                match self.apply_at_runtime(desired, &ops, newer, phases).await? {
                    AtRuntime::Applied(summary) => return Ok(Some((ApplyKind::Runtime, summary))),
                    AtRuntime::CheckLeftToNewer(summary) => {
                        let summary = format!("{summary} (its full check left to a newer version)");
                        return Ok(Some((ApplyKind::Runtime, summary)));
                    }
                    AtRuntime::ReloadInstead { version, reason } => (version, vec![reason]),
                }
            }
            Decision::Reload(reasons) => {
                let version = self.stage_timed(desired, phases).await?;
                self.check_version(version, desired, phases, Awaited::ByReload)
                    .await?;
                (version, reasons)
            }
        };
        if self.reload_waits() {
            self.change_at_runtime_while_waiting(desired).await;
        }
        if !self.wait_for_reload_slot(newer).await {
            return Ok(None);
        }
        let reloading = Instant::now();
        self.reload_to(version, desired).await?;
        phases.change = reloading.elapsed();
        Ok(Some((ApplyKind::Reload, reasons.join("; "))))
    }

    /// Whether a reload now would have to wait out the pacing.
    fn reload_waits(&self) -> bool {
        self.last_reload
            .is_some_and(|last| Instant::now() < last + self.config.min_reload_interval)
    }

    /// Waits out the reload pacing; false if a newer version arrived meanwhile.
    async fn wait_for_reload_slot(
        &self,
        newer: &mut watch::Receiver<Option<Arc<Desired>>>,
    ) -> bool {
        if let Some(last) = self.last_reload {
            let ready_at = last + self.config.min_reload_interval;
            if Instant::now() < ready_at {
                // A clone, so that waking up does not mark the newer version seen.
                let mut wake = newer.clone();
                tokio::select! {
                    _ = tokio::time::sleep_until(ready_at) => {}
                    _ = wake.changed() => {}
                }
            }
        }
        !newer.has_changed().unwrap_or(false)
    }

    async fn reload_to(
        &mut self,
        version: VersionName,
        desired: &Desired,
    ) -> Result<(), ApplyError> {
        self.tree.publish(version).map_err(ApplyError::Publish)?;
        // `current` names the new version; HAProxy still runs the old one.
        hawser_failpoint::failpoint!("agent.published_before_reload");
        self.set_phase(Phase::Reloading);
        self.last_reload = Some(Instant::now());
        let result = self.reload_current().await;
        match result {
            Ok(pid) => {
                self.status.send_modify(|s| {
                    s.reloads += 1;
                    s.worker_pid = Some(pid);
                });
                info!(
                    generation = desired.generation.get(),
                    worker = pid,
                    "reload verified"
                );
                let _ = self.tree.mark_loaded(version);
                // HAProxy serves the new version; `lkg` still names the old.
                hawser_failpoint::failpoint!("agent.reloaded_before_lkg");
                self.publish_good(version, desired)?;
                // What a reload restores from the server-state file is checked too.
                self.repair_drift().await;
                Ok(())
            }
            Err(e) if e.never_started() => {
                // HAProxy still runs the running version: only `current` goes back.
                if let Err(back) = self.tree.roll_back() {
                    warn!("cannot roll back: {back}");
                }
                self.publish_running();
                Err(e.into())
            }
            Err(e) => {
                self.status.send_modify(|s| s.failed_reloads += 1);
                if matches!(e, crate::reload::ReloadError::Refused { .. }) {
                    // The old worker still serves the running version.
                    if let Ok(Some(_)) = self.tree.roll_back() {
                        self.status.send_modify(|s| s.rollbacks += 1);
                    }
                } else {
                    self.roll_back_and_reload().await;
                }
                self.publish_running();
                Err(e.into())
            }
        }
    }

    /// Reloads HAProxy on `current`, saving the servers' state first; the
    /// new worker's pid once verified.
    async fn reload_current(&mut self) -> Result<u32, crate::reload::ReloadError> {
        // The new worker reads `live_twins.map` from the file.
        self.live_copies.forget();
        self.reloader
            .reload(&self.config.paths.server_state_file())
            .await
    }

    /// `current` back to `lkg` first (so a restart boots it), then reload it.
    async fn roll_back_and_reload(&mut self) {
        match self.tree.roll_back() {
            Ok(Some(lkg)) => {
                self.status.send_modify(|s| s.rollbacks += 1);
                match self.reload_current().await {
                    Ok(_) => {
                        let _ = self.tree.mark_loaded(lkg);
                    }
                    Err(e) => warn!("reload of the last good version {lkg} failed: {e}"),
                }
                if let Ok((files, plan)) = self.tree.read(lkg) {
                    self.unchecked = None;
                    self.set_running(Running {
                        generation: lkg.generation(),
                        files: files.into(),
                        plan: plan.into(),
                    });
                }
            }
            Ok(None) => warn!("no last good version to roll back to"),
            Err(e) => warn!("cannot roll back: {e}"),
        }
    }

    fn publish_good(&mut self, version: VersionName, desired: &Desired) -> Result<(), ApplyError> {
        self.tree.publish(version).map_err(ApplyError::Publish)?;
        self.tree.mark_good(version).map_err(ApplyError::Publish)?;
        self.unchecked = None;
        self.set_running(Running::of(desired));
        Ok(())
    }

    /// `running` is what HAProxy serves now; metrics name its backends so.
    fn set_running(&mut self, running: Running) {
        let served = ServedBackends::of(&running.plan);
        self.served.send_if_modified(|was| {
            let changed = **was != served;
            if changed {
                *was = Arc::new(served);
            }
            changed
        });
        self.running = running;
    }

    async fn repair_drift(&mut self) {
        // A repair may set `live_twins.map` again; anyone may have changed it.
        self.live_copies.forget();
        let ops = match drift::repairs(&self.runtime, &self.running.plan, &self.running.files).await
        {
            Ok(ops) => ops,
            Err(e) => {
                warn!("cannot compare live state with the applied version: {e}");
                return;
            }
        };
        if ops.is_empty() {
            return;
        }
        let summary = ops.iter().map(describe).collect::<Vec<_>>().join(", ");
        warn!("drift found, repairing: {summary}");
        match runtime_ops::execute(
            &self.runtime,
            &ops,
            &self.running.files,
            &self.running.plan,
            &mut self.live_copies,
        )
        .await
        {
            Ok(()) => self
                .status
                .send_modify(|s| s.drift_repairs += ops.len() as u64),
            Err(e) => warn!("drift repair failed: {e}"),
        }
    }

    async fn restart(&mut self, supervisor: &mut Supervisor) {
        self.live_copies.forget();
        // HAProxy starts again on `current`: runtime changes left unchecked
        // are gone with the old master (a newer version is on its way: the
        // check was left to it).
        if let Some(unchecked) = self.unchecked.take() {
            self.set_running(unchecked.checked);
        }
        self.status.send_modify(|s| {
            s.haproxy_restarts += 1;
            s.phase = Phase::Restarting;
        });
        if self.tree.current() != self.tree.lkg()
            && let Ok(Some(lkg)) = self.tree.roll_back()
            && let Ok((files, plan)) = self.tree.read(lkg)
        {
            self.status.send_modify(|s| s.rollbacks += 1);
            self.set_running(Running {
                generation: lkg.generation(),
                files: files.into(),
                plan: plan.into(),
            });
        }
        match supervisor.restart(&self.config.haproxy).await {
            Ok(()) => {
                if let Some(current) = self.tree.current() {
                    let _ = self.tree.mark_loaded(current);
                }
                self.repair_drift().await;
                self.publish_running();
            }
            Err(e) => {
                warn!("cannot restart HAProxy: {e}; trying again shortly");
                // `wait_exit` answers at once after a failed restart: pace the retries.
                tokio::time::sleep(Duration::from_secs(1)).await;
                self.status
                    .send_modify(|s| s.last_error = Some(format!("cannot restart HAProxy: {e}")));
            }
        }
    }
}
