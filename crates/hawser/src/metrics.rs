//! Prometheus metrics: applies, reloads, runtime operations, failures and
//! durations (fed by an agent's outcomes and status), renders, pushes to
//! agents (fed by the fleet's status), certificate expiry (the process's
//! own identity, and every TLS Secret HAProxy serves), and how much of the
//! sandbox around checks the kernel enforces.

mod served_certificates;
mod traffic;

use std::sync::Arc;

use hawser_agent::{AgentHandle, AgentStatus};
use hawser_haproxy::sandbox::Enforcement;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::{broadcast, watch};

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use hawser_pki::tls::SharedMaterial;

use hawser_controller::cycle::ControllerStatus;
use hawser_controller::fleet::FleetStatus;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

/// The registry and the instruments it holds.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    applies: Family<KindLabel, Counter>,
    apply_seconds: Histogram,
    reloads: Counter,
    failed_reloads: Counter,
    failed_stages: Family<ReasonLabel, Counter>,
    runtime_ops: Counter,
    drift_repairs: Counter,
    rollbacks: Counter,
    haproxy_restarts: Counter,
    applied_generation: Gauge,
    ready: Gauge,
    renders: Counter,
    render_seconds: Histogram,
    rejected_objects: Gauge,
    quarantined_objects: Gauge,
    spare_backends: Family<StateLabel, Gauge>,
    agents: Gauge,
    agents_converged: Gauge,
    pushes: Counter,
    push_seconds: Histogram,
    failed_pushes: Counter,
    push_bytes: Counter,
    certificate_expiry: Gauge,
    served_expiry: served_certificates::ServedExpiry,
    leader: Gauge,
    leader_epoch: Gauge,
    sandbox_enforced: Gauge,
    sandbox_landlock_abi: Gauge,
    log_lines_dropped: Counter,
    /// Held while the dropped lines are brought up to date at a scrape.
    log_sync: std::sync::Mutex<()>,
    traffic: traffic::Traffic,
}

/// How often the certificate expiry gauge is refreshed.
const EXPIRY_REFRESH: Duration = Duration::from_secs(30);

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("hawser");
        let applies = Family::<KindLabel, Counter>::default();
        let apply_seconds = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        let render_seconds = Histogram::new(exponential_buckets(0.0005, 2.0, 16));
        let push_seconds = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        let m = Metrics {
            applies,
            apply_seconds,
            reloads: Counter::default(),
            failed_reloads: Counter::default(),
            failed_stages: Family::default(),
            runtime_ops: Counter::default(),
            drift_repairs: Counter::default(),
            rollbacks: Counter::default(),
            haproxy_restarts: Counter::default(),
            applied_generation: Gauge::default(),
            ready: Gauge::default(),
            renders: Counter::default(),
            render_seconds,
            rejected_objects: Gauge::default(),
            quarantined_objects: Gauge::default(),
            spare_backends: Family::default(),
            agents: Gauge::default(),
            agents_converged: Gauge::default(),
            pushes: Counter::default(),
            push_seconds,
            failed_pushes: Counter::default(),
            push_bytes: Counter::default(),
            certificate_expiry: Gauge::default(),
            served_expiry: served_certificates::ServedExpiry::default(),
            leader: Gauge::default(),
            leader_epoch: Gauge::default(),
            sandbox_enforced: Gauge::default(),
            sandbox_landlock_abi: Gauge::default(),
            log_lines_dropped: Counter::default(),
            log_sync: std::sync::Mutex::new(()),
            traffic: traffic::Traffic::default(),
            registry: Registry::default(),
        };
        registry.register("applies", "Generations applied, by how", m.applies.clone());
        registry.register(
            "apply_duration_seconds",
            "Time to apply a generation",
            m.apply_seconds.clone(),
        );
        registry.register("reloads", "Verified HAProxy reloads", m.reloads.clone());
        registry.register(
            "failed_reloads",
            "HAProxy reloads refused or not verified",
            m.failed_reloads.clone(),
        );
        registry.register(
            "failed_stages",
            "Versions that could not be written to the state directory, by reason (disk_full: no space or quota left)",
            m.failed_stages.clone(),
        );
        registry.register(
            "runtime_operations",
            "Changes made through the runtime API",
            m.runtime_ops.clone(),
        );
        registry.register(
            "drift_repairs",
            "Live changes put back to the applied version",
            m.drift_repairs.clone(),
        );
        registry.register(
            "rollbacks",
            "Times the last good version was put back: a version HAProxy refused, or a restart from one that broke",
            m.rollbacks.clone(),
        );
        registry.register(
            "haproxy_restarts",
            "Times HAProxy's master exited and was restarted",
            m.haproxy_restarts.clone(),
        );
        registry.register(
            "applied_generation",
            "The generation HAProxy serves",
            m.applied_generation.clone(),
        );
        registry.register(
            "ready",
            "1 when a rendered, verified configuration is serving",
            m.ready.clone(),
        );
        registry.register("renders", "Renders of the manifests", m.renders.clone());
        registry.register(
            "render_duration_seconds",
            "Time to read and render the manifests",
            m.render_seconds.clone(),
        );
        registry.register(
            "rejected_objects",
            "Objects the last render rejected",
            m.rejected_objects.clone(),
        );
        registry.register(
            "quarantined_objects",
            "Objects left out of the last render because HAProxy refuses what they produce",
            m.quarantined_objects.clone(),
        );
        registry.register(
            "spare_backends",
            "Spare backends of the last render, free or lent to a new Service (a pool running dry makes the next new Service take a reload)",
            m.spare_backends.clone(),
        );
        registry.register(
            "agents",
            "Agents the controller pushes to",
            m.agents.clone(),
        );
        registry.register(
            "agents_converged",
            "Agents that hold and serve the newest render",
            m.agents_converged.clone(),
        );
        registry.register("pushes", "Apply calls answered by agents", m.pushes.clone());
        registry.register(
            "push_duration_seconds",
            "Time from sending an Apply to its answer (the agent's apply included)",
            m.push_seconds.clone(),
        );
        registry.register(
            "failed_pushes",
            "Apply calls that failed (transport, trust or refusal)",
            m.failed_pushes.clone(),
        );
        registry.register(
            "push_bytes",
            "File bytes sent to agents: only what each lacked, a changed file as the lines of its edit",
            m.push_bytes.clone(),
        );
        registry.register(
            "certificate_expiry_seconds",
            "Seconds until this process's controller/agent identity expires (0 when none is loaded)",
            m.certificate_expiry.clone(),
        );
        m.served_expiry.register(&mut registry);
        registry.register(
            "leader",
            "1 while this controller leads (pushes to agents, writes status)",
            m.leader.clone(),
        );
        registry.register(
            "leader_epoch",
            "The fencing epoch this controller pushes with while it leads",
            m.leader_epoch.clone(),
        );
        registry.register(
            "sandbox_enforced",
            "How much of the sandbox around checks of candidate content the kernel enforces: 2 all, 1 part (an older Landlock ABI), 0 none (no Landlock: the configuration policy only)",
            m.sandbox_enforced.clone(),
        );
        registry.register(
            "sandbox_landlock_abi",
            "The kernel's Landlock ABI version (0 without Landlock)",
            m.sandbox_landlock_abi.clone(),
        );
        registry.register(
            "log_lines_dropped",
            "Log lines dropped because stderr was not read fast enough (the log never blocks hawser)",
            m.log_lines_dropped.clone(),
        );
        let sandbox = hawser_haproxy::sandbox::support();
        m.sandbox_enforced.set(match sandbox.enforcement {
            Enforcement::Full => 2,
            Enforcement::Partial => 1,
            Enforcement::None => 0,
        });
        m.sandbox_landlock_abi.set(i64::from(sandbox.landlock_abi));
        Metrics { registry, ..m }
    }

    /// Keeps the leadership gauges in step, until the sender is dropped.
    pub async fn follow_leader(self: Arc<Self>, mut leading: watch::Receiver<Option<u64>>) {
        loop {
            let epoch = *leading.borrow_and_update();
            self.leader.set(i64::from(epoch.is_some()));
            self.leader_epoch
                .set(epoch.map_or(0, |e| i64::try_from(e).unwrap_or(i64::MAX)));
            if leading.changed().await.is_err() {
                return;
            }
        }
    }

    /// Keeps the push instruments in step with the fleet, until it closes.
    pub async fn follow_fleet(self: Arc<Self>, mut fleet: watch::Receiver<FleetStatus>) {
        // Per agent, what was counted already (agents come and go).
        let mut seen: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
        loop {
            {
                let now = fleet.borrow_and_update();
                let mut converged = 0;
                for (key, agent) in &now.agents {
                    let before = seen.entry(key.clone()).or_default();
                    let new_pushes = agent.pushes.saturating_sub(before.0);
                    self.pushes.inc_by(new_pushes);
                    // Each new push counts once, with the newest push's time
                    // (two pushes between two looks at the status are rare:
                    // one per agent and render).
                    let took = Duration::from_millis(agent.last_push_ms).as_secs_f64();
                    for _ in 0..new_pushes {
                        self.push_seconds.observe(took);
                    }
                    self.failed_pushes
                        .inc_by(agent.failed_pushes.saturating_sub(before.1));
                    self.push_bytes
                        .inc_by(agent.bytes_sent.saturating_sub(before.2));
                    *before = (agent.pushes, agent.failed_pushes, agent.bytes_sent);
                    converged += i64::from(agent.converged);
                }
                seen.retain(|key, _| now.agents.contains_key(key));
                self.agents
                    .set(i64::try_from(now.agents.len()).unwrap_or(i64::MAX));
                self.agents_converged.set(converged);
            }
            if fleet.changed().await.is_err() {
                return;
            }
        }
    }

    /// Keeps the render instruments in step with the controller's status.
    pub async fn follow_renders(
        self: Arc<Self>,
        mut controller: watch::Receiver<ControllerStatus>,
    ) {
        let mut renders_seen = 0;
        while controller.changed().await.is_ok() {
            let now = controller.borrow_and_update().clone();
            self.absorb_render(&now, &mut renders_seen);
        }
    }

    /// Refreshes the certificate expiry gauge, until the task is dropped.
    pub async fn follow_certificate(self: Arc<Self>, material: SharedMaterial) {
        loop {
            let left = material
                .current()
                .and_then(|m| m.not_after().duration_since(SystemTime::now()).ok())
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
            self.certificate_expiry.set(left);
            tokio::time::sleep(EXPIRY_REFRESH).await;
        }
    }

    fn absorb_render(&self, now: &ControllerStatus, renders_seen: &mut u64) {
        self.renders
            .inc_by(now.renders.saturating_sub(*renders_seen));
        *renders_seen = now.renders;
        self.render_seconds
            .observe(now.last_render_duration.as_secs_f64());
        let rejected = now
            .diagnostics
            .iter()
            .filter(|d| d.starts_with("rejected"))
            .count();
        self.rejected_objects
            .set(i64::try_from(rejected).unwrap_or(i64::MAX));
        self.quarantined_objects
            .set(i64::try_from(now.quarantined.len()).unwrap_or(i64::MAX));
        let spares = &now.spare_backends;
        for (state, count) in [("free", spares.free), ("lent", spares.lent.len())] {
            self.spare_backends
                .get_or_create(&StateLabel { state })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        self.served_expiry.follow(&now.served_certificates);
    }

    /// The text exposition format of a scrape: with `agent`, HAProxy's
    /// traffic by Kubernetes names too, read from it now.
    pub async fn scrape(&self, agent: Option<&AgentHandle>) -> String {
        self.served_expiry.refresh(SystemTime::now());
        self.count_dropped_log_lines();
        let mut out = String::new();
        if prometheus_client::encoding::text::encode_registry(&mut out, &self.registry).is_err() {
            out.clear();
        }
        if let Some(agent) = agent {
            self.traffic.encode(agent, &mut out).await;
        }
        let _ = prometheus_client::encoding::text::encode_eof(&mut out);
        out
    }

    /// Brings the count of dropped log lines up to the log's own.
    fn count_dropped_log_lines(&self) {
        let Ok(_sync) = self.log_sync.lock() else {
            return;
        };
        let dropped = crate::logs::dropped_lines();
        let counted = self.log_lines_dropped.get();
        if dropped > counted {
            self.log_lines_dropped.inc_by(dropped - counted);
        }
    }

    /// Keeps the instruments in step with the agent and controller, until
    /// their channels close.
    pub async fn follow(
        self: Arc<Self>,
        agent: AgentHandle,
        mut controller: watch::Receiver<ControllerStatus>,
    ) {
        let mut outcomes = agent.outcomes();
        let mut status = agent.status();
        let mut seen = status.borrow().clone();
        let mut renders_seen = 0;
        loop {
            tokio::select! {
                outcome = outcomes.recv() => match outcome {
                    Ok(o) => {
                        let kind = o.kind.label();
                        self.applies.get_or_create(&KindLabel { kind: kind.to_string() }).inc();
                        self.apply_seconds.observe(o.duration.as_secs_f64());
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                changed = status.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let now = status.borrow_and_update().clone();
                    self.absorb(&seen, &now);
                    seen = now;
                }
                changed = controller.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let now = controller.borrow_and_update().clone();
                    self.absorb_render(&now, &mut renders_seen);
                }
            }
        }
    }

    fn absorb(&self, old: &AgentStatus, new: &AgentStatus) {
        self.reloads.inc_by(new.reloads.saturating_sub(old.reloads));
        self.failed_reloads
            .inc_by(new.failed_reloads.saturating_sub(old.failed_reloads));
        for (reason, count) in &new.failed_stages {
            let before = old.failed_stages.get(reason).copied().unwrap_or_default();
            self.failed_stages
                .get_or_create(&ReasonLabel {
                    reason: reason.clone(),
                })
                .inc_by(count.saturating_sub(before));
        }
        self.runtime_ops
            .inc_by(new.runtime_ops.saturating_sub(old.runtime_ops));
        self.drift_repairs
            .inc_by(new.drift_repairs.saturating_sub(old.drift_repairs));
        self.rollbacks
            .inc_by(new.rollbacks.saturating_sub(old.rollbacks));
        self.haproxy_restarts
            .inc_by(new.haproxy_restarts.saturating_sub(old.haproxy_restarts));
        let generation = new.applied_generation.unwrap_or_default().get();
        self.applied_generation
            .set(i64::try_from(generation).unwrap_or(i64::MAX));
        self.ready.set(i64::from(new.is_ready()));
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

#[cfg(test)]
mod tests {
    use hawser_haproxy::sandbox::{Enforcement, support};

    use super::Metrics;

    #[tokio::test]
    async fn the_sandbox_support_is_exposed() {
        let text = Metrics::new().scrape(None).await;
        let support = support();
        let level = match support.enforcement {
            Enforcement::Full => 2,
            Enforcement::Partial => 1,
            Enforcement::None => 0,
        };
        assert!(
            text.contains(&format!("hawser_sandbox_enforced {level}\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "hawser_sandbox_landlock_abi {}\n",
                support.landlock_abi
            )),
            "{text}"
        );
    }
}
