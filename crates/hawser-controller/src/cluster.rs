//! The cluster source: kube-rs watchers turned into [`Store`] snapshots
//! that go through the same [`RenderCycle`] as the manifests directory.
//!
//! ```text
//!  watcher per kind (× namespace) ──events──► trim + from_k8s ──► Message ─┐
//!   Ingress, IngressClass, Service,          (in the watch task;          │
//!   EndpointSlice, Secret (type=tls),         malformed → a problem;      │
//!   Namespace, Gateway API kinds              optional kind not served    │
//!                                             → listed as empty)          ▼
//!                                                             Cluster (trimmed views,
//!  Secret GET when an Ingress starts to refer ◄── fetch ───── secret data only when referred to)
//!  to a Secret whose data was dropped                                     │ changed
//!                                                 coalesced (at once when lone, bounded in bursts)
//!                                                                         ▼
//!                                          RenderCycle::render(Store snapshot) ──► sink (the fleet)
//! ```
//!
//! Nothing renders until every watch has listed once: a render from half a
//! cluster (Ingresses without their Services) would be pushed to every
//! agent. A relist (after `410 Gone`, which kube's watcher handles) replaces
//! the objects of its watch only once it is complete. Objects are kept as
//! the model's trimmed views, never as full API objects; `managedFields`
//! and the `kubectl.kubernetes.io/last-applied-configuration` annotation
//! are dropped before conversion.
//!
//! The renders feed the status writers, leader only: Ingress addresses
//! ([`publish_status`]) and rejection events ([`report_rejections`]) follow
//! delivered snapshots, Gateway API conditions ([`publish_gateway_status`])
//! and refusal events ([`report_gateway_refusals`]) every rendered store.
//! Both status writers take their addresses from the publish Service
//! ([`follow_publish_service`]); `Programmed` also follows the fleet.
//!
//! Agent discovery ([`discover_agents`]) is the other use of the API:
//! Ready pods become the fleet's agents.

mod config_status;
mod config_watch;
mod default_certificate;
mod discovery;
mod events;
mod extra;
mod gateway_api_status;
mod leader;
mod publish_service;
mod seen;
mod status;
mod watch;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use ::kube::Client;
use hawser_crd::ExtraResource;
use hawser_model::{Kind, ObjectKey};
use hawser_plan::Generation;
use hawser_render::Renderer;
use serde::Serialize;
use tokio::sync::{mpsc, watch as channel};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::{info, warn};

pub use config_status::{Refusal, prove_tests, report_config};
pub use config_watch::{Applied, follow_config};
pub use default_certificate::shared_default_certificate;
pub use discovery::{AgentDiscovery, discover_agents};
pub use events::{report_gateway_refusals, report_rejections};
pub use gateway_api_status::{GATEWAY_STATUS_RETRY, GatewayStatusSources, publish_gateway_status};
pub use leader::{LeaseOptions, lead};
pub use publish_service::follow_publish_service;
pub use status::{INGRESS_STATUS_RETRY, publish_status};

use self::extra::{ExtraChange, ExtraObjects};
use self::seen::Cluster;
use self::watch::Message;
use crate::coalesce::{Change, Coalescer, QUEUED_AT_ONCE, sleep_until};
use crate::cycle::{ControllerStatus, Deliver, RenderCycle, SourceRead, renderer_changed};
use crate::quarantine::Judge;

/// The annotation `kubectl apply` leaves on objects: a full copy of the
/// object, never worth keeping.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What to watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeSourceOptions {
    /// Namespaces to watch; empty means all. Cluster-scoped kinds
    /// (IngressClass, GatewayClass, Namespace) are always watched
    /// cluster-wide.
    pub namespaces: Vec<String>,
    /// An extra label selector per kind (`hawser.dev/expose=true`), as the
    /// API server reads them (`a=b,c in (d,e),!f`).
    pub label_selectors: BTreeMap<Kind, String>,
    /// Secrets whose data is kept even when no Ingress refers to them, such
    /// as the configured default certificate.
    pub kept_secrets: BTreeSet<ObjectKey>,
    /// Further kinds templates read as `resources.<Kind>`.
    pub extra_resources: Vec<ExtraResource>,
    /// ConfigMaps a setting names (`tcpServices`), each watched alone.
    pub config_maps: BTreeSet<ObjectKey>,
}

/// The cluster source, as `/status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClusterStatus {
    /// Per watch (`Ingress`, or `Ingress app` when namespaces are listed).
    pub watches: BTreeMap<String, WatchStatus>,
    /// Objects held (trimmed views), malformed ones not counted.
    pub objects: usize,
    /// Objects that do not convert; each is a line of `source_problems`.
    pub malformed: usize,
    /// Secrets whose data is held (those referred to).
    pub secrets_with_data: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WatchStatus {
    /// The watch has listed at least once.
    pub synced: bool,
    /// Full lists: the first one, then one per relist (`410 Gone`, restart).
    pub lists: u64,
    pub errors: u64,
    pub last_error: Option<String>,
}

/// What the cluster source runs under: the renderer, and what to watch. A
/// HawserConfig change sends a new one.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// `None` while no valid configuration is known (the HawserConfig the
    /// controller started with does not render): the source watches, but
    /// renders (and so pushes) nothing until one is.
    pub renderer: Option<Arc<Renderer>>,
    pub options: KubeSourceOptions,
}

impl PartialEq for SourceConfig {
    fn eq(&self, other: &Self) -> bool {
        let config = |c: &SourceConfig| c.renderer.as_ref().map(|r| Arc::clone(r.config()));
        self.options == other.options && config(self) == config(other)
    }
}

/// Renders the cluster once every watch has listed, then after every change
/// (debounced), until `stop` resolves. Generations start at
/// `first_generation`. Watch failures are retried with kube's default
/// backoff and reported in [`ControllerStatus::cluster`]; they never end
/// the source.
///
/// A new `config` renders again at once; when it watches other objects
/// (namespaces, selectors), the watches start over and nothing renders
/// until they have all listed, so agents keep the last generation meanwhile.
pub async fn run_kube(
    client: Client,
    mut config: channel::Receiver<SourceConfig>,
    sink: impl Deliver,
    first_generation: Generation,
    judge: Option<Judge>,
    status: channel::Sender<ControllerStatus>,
    stop: impl Future<Output = ()>,
) {
    let mut current = config.borrow_and_update().clone();
    let mut watching = Watching::start(&client, &current.options);
    let mut config_open = true;
    let mut cycle = RenderCycle::new(first_generation).judged_by(judge);
    let mut coalescer = Coalescer::default();
    let mut renderer_changes = sink.renderer_changes();
    tokio::pin!(stop);
    loop {
        // A (re)listed cluster renders as soon as every watch has listed:
        // the list is the burst, and agents are waiting for it.
        let deadline = if !watching.ready() || current.renderer.is_none() {
            None
        } else if watching.rendered {
            coalescer.deadline(false)
        } else {
            coalescer.is_pending().then(Instant::now)
        };
        tokio::select! {
            () = &mut stop => break,
            changed = config.changed(), if config_open => {
                if changed.is_err() {
                    config_open = false;
                    continue;
                }
                let next = config.borrow_and_update().clone();
                if next.options != current.options {
                    info!("the watched objects changed: listing again");
                    watching.stop();
                    watching = Watching::start(&client, &next.options);
                }
                if next != current {
                    coalescer.changed(Instant::now(), Change::Complete);
                    current = next;
                }
            }
            () = renderer_changed(&mut renderer_changes) => {
                coalescer.changed(Instant::now(), Change::Complete);
            }
            message = watching.messages.recv() => {
                let Some(message) = message else { break };
                watching.take(message, &client, &mut coalescer, &status);
            }
            Some((index, change)) = watching.extra_messages.recv() => {
                if watching.extra.apply(index, change) {
                    coalescer.changed(Instant::now(), Change::Complete);
                }
                watching.report(&status);
            }
            // Reaps finished Secret reads (watch tasks run until stopped).
            Some(done) = watching.tasks.join_next() => {
                if let Err(error) = done
                    && error.is_panic()
                {
                    warn!("a cluster source task failed: {error}");
                }
            }
            () = sleep_until(deadline) => {
                let Some(renderer) = &current.renderer else { continue };
                // Objects of the same operation already received (a
                // Service applied with its Ingress) are rendered together.
                // They may ask for more quiet (a Secret still being read).
                for _ in 0..QUEUED_AT_ONCE {
                    let Ok(message) = watching.messages.try_recv() else { break };
                    watching.take(message, &client, &mut coalescer, &status);
                }
                if watching.rendered
                    && coalescer.deadline(false).is_some_and(|later| later > Instant::now())
                {
                    continue;
                }
                let started = Instant::now();
                coalescer.rendering(started);
                watching.rendered = true;
                let (mut store, problems) = watching.cluster.snapshot();
                watching.extra.fill(&mut store);
                watching.report(&status);
                cycle.render(SourceRead { store, problems, started }, renderer, &sink, &status).await;
            }
        }
    }
    watching.stop();
}

/// The cluster as `options` watch it, once every watch has listed and the
/// Secrets Ingresses name are read, with the objects that do not convert:
/// for one-off reports (`hawser migrate --kubernetes`). `Err` when that
/// takes longer than `timeout`, naming the watches that did not list and
/// their last error.
pub async fn snapshot(
    client: &Client,
    options: &KubeSourceOptions,
    timeout: Duration,
) -> Result<(hawser_model::Store, Vec<String>), String> {
    let mut watching = Watching::start(client, options);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    while !watching.ready() {
        tokio::select! {
            () = &mut deadline => {
                watching.stop();
                let waiting: Vec<String> = watching
                    .cluster
                    .status()
                    .watches
                    .into_iter()
                    .filter(|(_, w)| !w.synced)
                    .map(|(name, w)| match w.last_error {
                        Some(error) => format!("{name} ({error})"),
                        None => name,
                    })
                    .collect();
                return Err(format!(
                    "the cluster did not list within {}s: waiting for {}",
                    timeout.as_secs(),
                    if waiting.is_empty() { "Secret reads".to_string() } else { waiting.join(", ") }
                ));
            }
            message = watching.messages.recv() => {
                let Some(message) = message else { break };
                let effect = watching.cluster.apply(message);
                for key in effect.fetch {
                    watching.fetch_secret(client, key);
                }
            }
            Some((index, change)) = watching.extra_messages.recv() => {
                watching.extra.apply(index, change);
            }
        }
    }
    let (mut store, problems) = watching.cluster.snapshot();
    watching.extra.fill(&mut store);
    watching.stop();
    Ok((store, problems))
}

/// The watches of one set of options, and what they have seen.
struct Watching {
    tasks: JoinSet<()>,
    messages: mpsc::UnboundedReceiver<Message>,
    messages_tx: mpsc::UnboundedSender<Message>,
    cluster: Cluster,
    extra_messages: mpsc::UnboundedReceiver<(usize, ExtraChange)>,
    extra: ExtraObjects,
    /// Rendered since these watches listed: later changes are debounced.
    rendered: bool,
}

impl Watching {
    fn start(client: &Client, options: &KubeSourceOptions) -> Watching {
        let (messages_tx, messages) = mpsc::unbounded_channel();
        let mut tasks = JoinSet::new();
        let scopes = watch::spawn_all(&mut tasks, client, options, &messages_tx);
        let (extra_tx, extra_messages) = mpsc::unbounded_channel();
        let extra = ExtraObjects::start(&mut tasks, client, &options.extra_resources, &extra_tx);
        info!(
            "watching {} kind/namespace scopes and {} extra kinds",
            scopes.len(),
            options.extra_resources.len()
        );
        Watching {
            tasks,
            messages,
            messages_tx,
            cluster: Cluster::new(scopes, options.kept_secrets.clone()),
            extra_messages,
            extra,
            rendered: false,
        }
    }

    /// Every watch has listed: a render sees all that is watched.
    fn ready(&self) -> bool {
        self.cluster.ready() && self.extra.ready()
    }

    /// Applies a watch `message` to the cluster and notes the change.
    fn take(
        &mut self,
        message: Message,
        client: &Client,
        coalescer: &mut Coalescer,
        status: &channel::Sender<ControllerStatus>,
    ) {
        let effect = self.cluster.apply(message);
        // An object whose Secrets are still being read is not complete
        // yet: rendered at once, it would be served without them for a
        // generation.
        let change = if effect.fetch.is_empty() {
            Change::Complete
        } else {
            Change::Partial
        };
        for key in effect.fetch {
            self.fetch_secret(client, key);
        }
        if effect.changed {
            coalescer.changed(Instant::now(), change);
        }
        if effect.watch_status {
            self.report(status);
        }
    }

    fn report(&self, status: &channel::Sender<ControllerStatus>) {
        let mut report = self.cluster.status();
        self.extra.report(&mut report.watches);
        status.send_if_modified(|s| {
            let changed = s.cluster.as_ref() != Some(&report);
            s.cluster = Some(report);
            changed
        });
    }

    fn fetch_secret(&mut self, client: &Client, key: ObjectKey) {
        self.tasks.spawn(watch::fetch_secret(
            client.clone(),
            key,
            self.messages_tx.clone(),
        ));
    }

    fn stop(&mut self) {
        self.tasks.abort_all();
    }
}

/// One watch: a kind, in one namespace or in all (`None`; cluster-scoped
/// kinds too).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Scope {
    pub kind: Kind,
    pub namespace: Option<String>,
}

impl Scope {
    fn covers(&self, kind: Kind, key: &ObjectKey) -> bool {
        self.kind == kind
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == key.namespace)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}
