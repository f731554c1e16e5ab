//! The fleet: every agent gets the newest render, over mutual TLS, with only
//! the files it lacks.
//!
//! ```text
//!  render cycle ──Snapshot(generation, store)──► watch ──► one link per agent (in parallel)
//!                                                           │ connect (TLS 1.3, both sides checked)
//!                                                           │ WatchState ─► what the agent holds
//!                                                           │ the render for the agent's settings (the cycle's own when they are the most asked)
//!                                                           │ differs? Apply(epoch, expected, generation, missing blobs)
//!                                                           ▼
//!                                                        FleetStatus (per agent: connected, generations, last result, bytes)
//! ```
//!
//! The membership is dynamic: `--agent` addresses at start, then whatever
//! [`Fleet::set_agents`] (or the discovery list [`Fleet::follow_agents`]
//! follows) says. A new agent's link starts at once and pushes the newest
//! snapshot as soon as it connects; a departed agent's link stops and its
//! entry leaves [`FleetStatus`].
//!
//! A link re-pushes whenever what the agent reports differs from what it
//! should run: after a restart, a reconnect, or a drift. When the identity
//! or trust changes, a link opens a new connection before dropping the old
//! one (make before break), so a CA rotation never fails a call; the old
//! connection stays in use only while the peers' per-call trust checks still
//! accept it.

mod build;
#[cfg(test)]
mod leader_tests;
mod link;
mod members;
mod push;
#[cfg(test)]
mod tests;
mod watched;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use hawser_model::{Kind, ObjectKey, ObjectRef, Store};
use hawser_render::{CertificatePem, RenderConfig, Rendered, Severity};
use rustls_pki_types::CertificateDer;
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tracing::{error, info_span};

pub use build::Renders;

use self::members::Members;
use self::watched::Watched;

use crate::cycle::{CycleRender, Deliver};

/// One agent to push to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AgentTarget {
    pub addr: SocketAddr,
}

/// The controller's side of TLS, provided by its caller.
#[derive(Clone)]
pub struct ClientTls {
    pub config: Arc<rustls::ClientConfig>,
    /// The name every agent certificate must carry (sent as SNI too).
    pub agent_name: String,
    /// Changes whenever identity or trust changes; links then reconnect.
    pub revision: watch::Receiver<String>,
    /// Re-checks an agent's chain against the trust of the moment.
    pub recheck: ServerCheck,
}

/// Re-checks an agent's certificate chain (as presented when the connection
/// opened) against the trust of the moment; `Err` says why not.
pub type ServerCheck = Arc<dyn Fn(&[CertificateDer<'static>]) -> Result<(), String> + Send + Sync>;

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("agent_name", &self.agent_name)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// The agents at start (`--agent`); discovery changes them later.
    pub agents: Vec<AgentTarget>,
    pub tls: ClientTls,
    pub render: RenderConfig,
    pub default_certificate: CertificatePem,
    /// `Some(epoch)` while this controller leads (agents refuse pushes of
    /// a lower epoch); `None` stops every push at once. A static controller
    /// sends `Some` once and keeps it.
    pub leader: watch::Receiver<Option<u64>>,
    /// Sent with every Apply, for the agents' logs.
    pub controller: String,
    /// How long to wait before retrying an unreachable agent.
    pub retry: Duration,
}

/// What the render cycle hands to the fleet.
#[derive(Debug)]
pub struct Snapshot {
    pub generation: u64,
    pub store: Arc<Store>,
    /// The configuration this generation is rendered under; each agent's
    /// render (and the webhook's dry run) uses it, so a HawserConfig change
    /// reaches every agent as one generation.
    pub config: Arc<RenderConfig>,
    /// The render cycle's render of `store` (under `config` and the
    /// settings most agents ask for): the agents asking for those settings
    /// receive it as it is.
    pub rendered: Option<Arc<Rendered>>,
    /// The Ingresses this render serves (ours, not rejected): see
    /// [`Snapshot::served`]. Set ahead only by tests.
    pub served: Arc<OnceLock<BTreeSet<ObjectKey>>>,
    /// The objects this render rejected, and why.
    pub rejected: Arc<Vec<(ObjectRef, String)>>,
}

/// One agent, as the controller sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AgentLinkStatus {
    pub addr: String,
    pub connected: bool,
    /// The snapshot generation this agent should run.
    pub target_generation: Option<u64>,
    /// What the agent reports holding and serving.
    pub agent_desired_generation: u64,
    pub agent_applied_generation: u64,
    /// It holds and serves exactly the render meant for it.
    pub converged: bool,
    /// The newest snapshot generation it was seen serving (its render of
    /// it, verified); kept while it applies a newer one, cleared when it
    /// serves something else. Gateway API `Programmed` follows it.
    pub serving_generation: Option<u64>,
    pub last_outcome: Option<String>,
    /// HAProxy's words, or why the agent could not be reached.
    pub last_error: Option<String>,
    pub pushes: u64,
    pub failed_pushes: u64,
    /// Files the last push carried, whole or as edits of held ones, and
    /// their bytes (an edit's: the lines it inserts).
    pub last_push_files: u64,
    pub last_push_bytes: u64,
    /// From sending the last Apply to its answer, the agent's apply included.
    pub last_push_ms: u64,
    pub bytes_sent: u64,
    pub reconnects: u64,
}

impl AgentLinkStatus {
    /// The connection is gone: what the agent holds is no longer known, so
    /// it is not counted converged (it serves on, but may miss what the
    /// controller renders meanwhile). `serving_generation` stays: what it
    /// was last seen serving, for Gateway API status.
    pub fn lose_connection(&mut self) {
        self.connected = false;
        self.converged = false;
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FleetStatus {
    /// This controller's leader epoch; `None` while it does not lead.
    pub epoch: Option<u64>,
    pub agents: BTreeMap<String, AgentLinkStatus>,
}

impl FleetStatus {
    /// Every agent holds and serves the render of `generation` (or newer).
    pub fn converged_at(&self, generation: u64) -> bool {
        self.agents
            .values()
            .all(|a| a.converged && a.target_generation.is_some_and(|g| g >= generation))
    }
}

/// The running fleet; dropping it stops nothing, `stop` does.
#[derive(Debug)]
pub struct Fleet {
    snapshots: Arc<watch::Sender<Option<Arc<Snapshot>>>>,
    stores: Arc<watch::Sender<Option<RenderedStore>>>,
    renders: Arc<Renders>,
    status: watch::Receiver<FleetStatus>,
    members: Arc<Members>,
    followers: Mutex<Vec<Watched>>,
    /// Where watched loops report an end; see [`Fleet::failure`].
    ended: (
        watched::Ended,
        Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    ),
    stop: watch::Sender<bool>,
}

impl Fleet {
    /// Starts a link to each of `config.agents`; [`Fleet::set_agents`] and
    /// [`Fleet::follow_agents`] change the membership later.
    pub fn start(config: FleetConfig) -> Result<Fleet, hawser_render::RenderError> {
        let renders = Arc::new(Renders::new(
            config.render.clone(),
            config.default_certificate.clone(),
        )?);
        let (snapshots, snapshots_rx) = watch::channel(None);
        let (status_tx, status) = watch::channel(FleetStatus {
            epoch: *config.leader.borrow(),
            agents: BTreeMap::new(),
        });
        let (stop, stop_rx) = watch::channel(false);
        let (ended_tx, ended_rx) = mpsc::unbounded_channel();
        let status_tx = Arc::new(status_tx);
        let epoch = Watched::spawn(
            "leader epoch follower".to_string(),
            info_span!("fleet_epoch"),
            follow_epoch(
                config.leader.clone(),
                Arc::clone(&status_tx),
                stop_rx.clone(),
            ),
            ended_tx.clone(),
        );
        let agents = config.agents.clone();
        let members = Arc::new(Members::new(
            config,
            Arc::clone(&renders),
            snapshots_rx,
            status_tx,
            stop_rx,
            ended_tx.clone(),
        ));
        members.set(&agents);
        Ok(Fleet {
            snapshots: Arc::new(snapshots),
            stores: Arc::new(watch::channel(None).0),
            renders,
            status,
            members,
            followers: Mutex::new(vec![epoch]),
            ended: (ended_tx, Mutex::new(Some(ended_rx))),
            stop,
        })
    }

    pub fn status(&self) -> watch::Receiver<FleetStatus> {
        self.status.clone()
    }

    /// Where the render cycle delivers.
    pub fn sink(&self) -> FleetSink {
        FleetSink {
            snapshots: Arc::clone(&self.snapshots),
            stores: Arc::clone(&self.stores),
            renders: Arc::clone(&self.renders),
        }
    }

    /// Makes `agents` the fleet: links to new agents start at once (and
    /// push the newest snapshot as soon as they connect); links to agents
    /// no longer listed stop and leave [`FleetStatus`].
    pub fn set_agents(&self, agents: &[AgentTarget]) {
        self.members.set(agents);
    }

    /// Keeps the membership equal to the newest list on `targets` (agent
    /// discovery), until the fleet stops or the sender is dropped.
    pub fn follow_agents(&self, mut targets: watch::Receiver<Vec<AgentTarget>>) {
        let members = Arc::clone(&self.members);
        let mut stop = self.stop.subscribe();
        let follow = async move {
            loop {
                let agents = targets.borrow_and_update().clone();
                members.set(&agents);
                tokio::select! {
                    // Its sender gone (discovery ended: its own supervisor
                    // says so), the last list stays until the stop.
                    changed = targets.changed() => if changed.is_err() { break },
                    _ = stop.changed() => return,
                }
            }
            let _ = stop.wait_for(|stopped| *stopped).await;
        };
        let follower = Watched::spawn(
            "agent discovery follower".to_string(),
            info_span!("fleet_discovery"),
            follow,
            self.ended.0.clone(),
        );
        self.followers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(follower);
    }

    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for follower in self
            .followers
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            follower.join().await;
        }
        for link in self.members.take() {
            link.join().await;
        }
    }

    /// Resolves when one of the fleet's loops (a link, a follower) ended
    /// while the fleet runs, after logging which: the command treats that
    /// as fatal. Pending forever once the fleet stops, and for all but the
    /// first caller.
    pub fn failure(&self) -> impl Future<Output = ()> + Send + 'static {
        let ended = self
            .ended
            .1
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let stop = self.stop.subscribe();
        async move {
            let Some(mut ended) = ended else {
                return std::future::pending().await;
            };
            while let Some(name) = ended.recv().await {
                if !*stop.borrow() {
                    error!("the fleet's {name} ended while the fleet runs");
                    return;
                }
            }
            std::future::pending().await
        }
    }
}

/// Keeps [`FleetStatus::epoch`] equal to the leadership, until the fleet
/// stops (a static controller drops its sender: the last value stays).
async fn follow_epoch(
    mut leader: watch::Receiver<Option<u64>>,
    status: Arc<watch::Sender<FleetStatus>>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let epoch = *leader.borrow_and_update();
        status.send_if_modified(|s| std::mem::replace(&mut s.epoch, epoch) != epoch);
        tokio::select! {
            changed = leader.changed() => if changed.is_err() { break },
            _ = stop.changed() => return,
        }
    }
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// Delivers each render cycle's store to every link; every rendered store,
/// delivered or not, to the Gateway API status writer.
#[derive(Debug, Clone)]
pub struct FleetSink {
    snapshots: Arc<watch::Sender<Option<Arc<Snapshot>>>>,
    stores: Arc<watch::Sender<Option<RenderedStore>>>,
    renders: Arc<Renders>,
}

impl Deliver for FleetSink {
    fn renderer(&self, base: &hawser_render::Renderer) -> Option<Arc<hawser_render::Renderer>> {
        self.renders.cycle_renderer(base)
    }

    fn renderer_changes(&self) -> Option<watch::Receiver<()>> {
        Some(self.renders.cycle_renderer_changes())
    }

    fn deliver(&self, render: &CycleRender) {
        let rendered = &render.rendered;
        self.snapshots.send_replace(Some(Arc::new(Snapshot {
            generation: render.generation.get(),
            store: Arc::clone(&render.store),
            config: Arc::clone(&render.config),
            rendered: Some(Arc::clone(rendered)),
            served: Arc::default(),
            rejected: Arc::new(
                rendered
                    .diagnostics
                    .iter()
                    .filter(|d| d.severity == Severity::Rejected)
                    .map(|d| (d.object.clone(), d.message.clone()))
                    .collect(),
            ),
        })));
    }

    fn rendered(&self, render: &CycleRender) {
        self.stores.send_replace(Some(RenderedStore::of(render)));
    }
}

/// A store rendered without error, the configuration it was rendered under
/// (which names the controller whose objects it serves), and the Gateway API
/// status the render computed for it.
#[derive(Debug, Clone)]
pub struct RenderedStore {
    /// The generation whose configuration this render is (the last one
    /// delivered when the render changed nothing): agents serving it, or a
    /// newer one, serve what this store says.
    pub generation: u64,
    pub store: Arc<Store>,
    pub config: Arc<RenderConfig>,
    pub gateway_status: Arc<hawser_render::GatewayStatus>,
}

impl RenderedStore {
    pub fn of(render: &CycleRender) -> RenderedStore {
        RenderedStore {
            generation: render.generation.get(),
            store: Arc::clone(&render.store),
            config: Arc::clone(&render.config),
            gateway_status: Arc::clone(&render.rendered.gateway_status),
        }
    }
}

/// The Ingresses a render serves: ours (by class) and not rejected.
pub fn served_ingresses(store: &Store, rendered: &hawser_render::Rendered) -> BTreeSet<ObjectKey> {
    let left_out: BTreeSet<&ObjectRef> = rendered
        .diagnostics
        .iter()
        .filter(|d| matches!(d.severity, Severity::Rejected | Severity::Ignored))
        .map(|d| &d.object)
        .collect();
    store
        .ingresses()
        .map(|i| ObjectRef::new(Kind::Ingress, i.key.clone()))
        .filter(|r| !left_out.contains(r))
        .map(|r| r.key)
        .collect()
}

impl Snapshot {
    /// The Ingresses this render serves (ours, not rejected), made when
    /// first asked: the status writer asks, and the pushes to agents do not
    /// wait for a set of every Ingress to be made (at thousands of
    /// Ingresses, milliseconds of a change's way to traffic).
    pub fn served(&self) -> &BTreeSet<ObjectKey> {
        self.served.get_or_init(|| match &self.rendered {
            Some(rendered) => served_ingresses(&self.store, rendered),
            None => BTreeSet::new(),
        })
    }
}

impl FleetSink {
    /// Every snapshot delivered (the webhook and the status writer follow it).
    pub fn subscribe(&self) -> watch::Receiver<Option<Arc<Snapshot>>> {
        self.snapshots.subscribe()
    }

    /// The newest store rendered without error, whether its render was
    /// delivered or equal to the last (the Gateway API status follows it).
    pub fn subscribe_stores(&self) -> watch::Receiver<Option<RenderedStore>> {
        self.stores.subscribe()
    }
}
