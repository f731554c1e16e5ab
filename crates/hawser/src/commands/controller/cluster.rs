//! `hawser controller --kubernetes`: the HawserConfig, the cluster source,
//! agent discovery, leader election, Ingress status and the webhook, wired
//! around one fleet.

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::Context as _;
use hawser_controller::addresses::PublishedAddresses;
use hawser_controller::cluster::{
    AgentDiscovery, Applied, GatewayStatusSources, KubeSourceOptions, LeaseOptions, Refusal,
    SourceConfig, discover_agents, follow_config, follow_publish_service, lead, prove_tests,
    publish_gateway_status, publish_status, report_config, report_gateway_refusals,
    report_rejections, run_kube, shared_default_certificate,
};
use hawser_controller::cycle::ControllerStatus;
use hawser_controller::fleet::{Fleet, Snapshot};
use hawser_controller::quarantine::Judge;
use hawser_controller::webhook::{WebhookState, router, serve_tls};
use hawser_crd::{HawserConfig, HawserConfigSpec};
use hawser_haproxy::HaproxyBinary;
use hawser_model::{Kind, ObjectKey, Store};
use hawser_pki::tls::serving_config;
use hawser_render::{CertificatePem, RenderConfig, Renderer};
use kube::{Api, Client};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{info, warn};

use super::UsageError;
use crate::cli::{ClusterArgs, ControllerArgs};
use crate::commands::tasks::{SHUTDOWN_GRACE, Tasks};

/// The cluster as this controller found it at start.
pub struct Cluster {
    client: Client,
    pub namespace: String,
    spec: HawserConfigSpec,
}

/// What the common part of `hawser controller` hands over.
pub struct Started {
    /// `None` while the HawserConfig does not render.
    pub renderer: Option<Renderer>,
    pub config: RenderConfig,
    pub default_certificate: CertificatePem,
    pub leader: watch::Sender<Option<u64>>,
    pub controller: watch::Sender<ControllerStatus>,
    pub stop: watch::Receiver<bool>,
}

impl Cluster {
    /// Connects (in-cluster configuration or kubeconfig) and reads the
    /// HawserConfig; defaults apply when there is none.
    pub async fn connect(args: &ClusterArgs) -> anyhow::Result<Cluster> {
        let client = Client::try_default().await.map_err(|e| {
            UsageError(anyhow::anyhow!(
                "--kubernetes needs an in-cluster service account or a kubeconfig: {e}"
            ))
        })?;
        let namespace = args
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        let configs: Api<HawserConfig> = Api::namespaced(client.clone(), &namespace);
        let spec = match configs.get_opt(&args.config_name).await {
            Ok(Some(config)) => config.spec,
            Ok(None) => {
                warn!(
                    "HawserConfig {namespace}/{} does not exist; using the defaults",
                    args.config_name
                );
                HawserConfigSpec::default()
            }
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "cannot read HawserConfig {namespace}/{}: {e}",
                    args.config_name
                ));
            }
        };
        // The HawserConfig's Valid condition says whether this spec renders.
        let verdict = spec
            .render_config()
            .map(|_| ())
            .map_err(Refusal::invalid_spec);
        if let Err(e) = report_config(client.clone(), &namespace, &args.config_name, &verdict).await
        {
            warn!("cannot write the HawserConfig status: {e}");
        }
        Ok(Cluster {
            client,
            namespace,
            spec,
        })
    }

    /// The generated default certificate, shared through a Secret.
    pub async fn default_certificate(&self, args: &ClusterArgs) -> anyhow::Result<CertificatePem> {
        shared_default_certificate(
            self.client.clone(),
            &self.namespace,
            &args.default_certificate_secret,
        )
        .await
        .map_err(anyhow::Error::msg)
    }

    pub fn render_config(&self) -> anyhow::Result<RenderConfig> {
        self.spec
            .render_config()
            .map_err(|e| anyhow::anyhow!("HawserConfig {e}"))
    }

    /// Runs everything that talks to the API server until one part fails
    /// or `started.stop` is set.
    pub async fn run(
        self,
        args: &ControllerArgs,
        fleet: &Fleet,
        started: Started,
    ) -> anyhow::Result<()> {
        let stopped = |mut rx: watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let cluster_args = &args.cluster;
        let mut tasks = Tasks::new(started.stop.clone());

        // The HawserConfig in force, and what follows from it: the renderer,
        // the watched objects, the agents. A change replaces each of them
        // (or is refused, and the Valid condition says why).
        let live = Arc::new(Live {
            args: cluster_args.clone(),
            namespace: self.namespace.clone(),
            default_certificate: started.default_certificate.clone(),
        });
        let (source_tx, source) =
            watch::channel(live.source_config(&self.spec, started.renderer.map(Arc::new))?);
        let (agents_tx, agents) = watch::channel(live.agent_discovery(&self.spec));
        let source_tx = Arc::new(source_tx);
        let agents_tx = Arc::new(agents_tx);
        // HAProxy beside the controller: it runs the webhook's check and
        // spec.tests, which run against the newest objects the first time
        // once there are objects, then on every change.
        let haproxy = HaproxyBinary::locate().ok();
        let webhook_haproxy = haproxy.clone();
        let judge = haproxy.clone().map(Judge::render_gate);
        let snapshots = fleet.sink().subscribe();
        if source.borrow().renderer.is_some() && !self.spec.tests.is_empty() {
            tasks.spawn_job(
                "prove_start_tests",
                prove_start_tests(
                    self.client.clone(),
                    self.namespace.clone(),
                    cluster_args.config_name.clone(),
                    self.spec.clone(),
                    haproxy.clone(),
                    snapshots.clone(),
                ),
            );
        }
        tasks.spawn(
            "follow_config",
            follow_config(
                self.client.clone(),
                self.namespace.clone(),
                cluster_args.config_name.clone(),
                self.spec.clone(),
                move |spec| -> Applied {
                    let live = Arc::clone(&live);
                    let source_tx = Arc::clone(&source_tx);
                    let agents_tx = Arc::clone(&agents_tx);
                    let haproxy = haproxy.clone();
                    let store = newest_store(&snapshots);
                    Box::pin(async move {
                        let config = spec
                            .render_config()
                            .map_err(|e| Refusal::invalid_spec(format!("HawserConfig {e}")))?;
                        prove_tests(&config, &store, &spec.tests, haproxy.as_ref()).await?;
                        let renderer = Renderer::new(config)
                            .map_err(|e| Refusal::invalid_spec(e.to_string()))?
                            .with_default_certificate(live.default_certificate.clone());
                        let source = live
                            .source_config(&spec, Some(Arc::new(renderer)))
                            .map_err(|e| Refusal::invalid_spec(e.to_string()))?;
                        source_tx.send_if_modified(|current| replace_if_new(current, source));
                        agents_tx.send_if_modified(|current| {
                            replace_if_new(current, live.agent_discovery(&spec))
                        });
                        Ok(())
                    })
                },
                stopped(started.stop.clone()),
            ),
        );

        // Agents: Ready pods matching the selector.
        let (targets_tx, targets) = watch::channel(Vec::new());
        fleet.follow_agents(targets);
        tasks.spawn(
            "discover_agents",
            discover_agents(
                self.client.clone(),
                agents,
                targets_tx,
                stopped(started.stop.clone()),
            ),
        );

        // Leader election: only the leader pushes and writes status.
        let identity = cluster_args
            .identity
            .clone()
            .unwrap_or_else(|| format!("hawser-controller-{}", std::process::id()));
        let leading = started.leader.subscribe();
        tasks.spawn(
            "lead",
            lead(
                self.client.clone(),
                LeaseOptions::new(&self.namespace, &cluster_args.lease_name, &identity),
                started.leader,
                stopped(started.stop.clone()),
            ),
        );

        let snapshots = fleet.sink().subscribe();
        tasks.spawn(
            "report_rejections",
            report_rejections(
                self.client.clone(),
                identity.clone(),
                snapshots.clone(),
                leading.clone(),
                stopped(started.stop.clone()),
            ),
        );
        tasks.spawn(
            "report_gateway_refusals",
            report_gateway_refusals(
                self.client.clone(),
                identity.clone(),
                fleet.sink().subscribe_stores(),
                leading.clone(),
                stopped(started.stop.clone()),
            ),
        );
        // The publish Service's addresses: Ingress and Gateway status alike.
        let addresses = match &cluster_args.publish_service {
            Some(service) => {
                let key = parse_key(service, "--publish-service")?;
                let (addresses_tx, addresses) =
                    watch::channel(PublishedAddresses::unread(key.clone()));
                tasks.spawn(
                    "follow_publish_service",
                    follow_publish_service(
                        self.client.clone(),
                        key,
                        addresses_tx,
                        stopped(started.stop.clone()),
                    ),
                );
                tasks.spawn(
                    "publish_status",
                    publish_status(
                        self.client.clone(),
                        addresses.clone(),
                        snapshots.clone(),
                        leading.clone(),
                        stopped(started.stop.clone()),
                    ),
                );
                Some(addresses)
            }
            None => None,
        };
        tasks.spawn(
            "publish_gateway_status",
            publish_gateway_status(
                self.client.clone(),
                GatewayStatusSources {
                    stores: fleet.sink().subscribe_stores(),
                    fleet: fleet.status(),
                    addresses,
                },
                leading,
                stopped(started.stop.clone()),
            ),
        );

        if let (Some(listen), Some(dir)) =
            (cluster_args.webhook_listen, &cluster_args.webhook_tls_dir)
        {
            let tls = serving_config(dir).map_err(|e| anyhow::anyhow!("--webhook-tls-dir {e}"))?;
            let listener = TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on --webhook-listen {listen}"))?;
            let state = WebhookState {
                snapshots,
                config: Arc::new(started.config.clone()),
                default_certificate: started.default_certificate.clone(),
                haproxy: webhook_haproxy,
            };
            info!("admission webhook on https://{listen}/validate");
            tasks.spawn(
                "webhook",
                serve_tls(listener, tls, router(state), stopped(started.stop.clone())),
            );
        }

        let result = tasks
            .run_until(run_kube(
                self.client,
                source,
                fleet.sink(),
                hawser_plan::Generation::new(1),
                judge,
                started.controller,
                stopped(started.stop),
            ))
            .await;
        tasks.drain(SHUTDOWN_GRACE).await;
        Ok(result?)
    }
}

/// What a HawserConfig spec means for the running controller, with the
/// flags that override it.
struct Live {
    args: ClusterArgs,
    namespace: String,
    default_certificate: CertificatePem,
}

impl Live {
    fn source_config(
        &self,
        spec: &HawserConfigSpec,
        renderer: Option<Arc<Renderer>>,
    ) -> anyhow::Result<SourceConfig> {
        let mut kept_secrets = BTreeSet::new();
        let default_certificate = renderer
            .as_ref()
            .and_then(|r| r.config().settings.default_certificate.as_ref());
        if let Some(default) = default_certificate {
            kept_secrets.insert(parse_key(default, "settings.defaultCertificate")?);
        }
        let tcp_services = renderer
            .as_ref()
            .and_then(|r| r.config().settings.tcp_services.as_ref());
        let mut config_maps = BTreeSet::new();
        if let Some(name) = tcp_services {
            config_maps.insert(parse_key(name, "settings.tcpServices")?);
        }
        let mut options = KubeSourceOptions {
            namespaces: spec.watch.namespaces.clone(),
            kept_secrets,
            config_maps,
            extra_resources: spec.watch.extra_resources.clone(),
            ..KubeSourceOptions::default()
        };
        if let Some(selector) = &spec.watch.label_selector {
            options
                .label_selectors
                .insert(Kind::Ingress, selector.clone());
        }
        Ok(SourceConfig { renderer, options })
    }

    fn agent_discovery(&self, spec: &HawserConfigSpec) -> AgentDiscovery {
        AgentDiscovery {
            namespace: self.namespace.clone(),
            label_selector: self
                .args
                .agent_selector
                .clone()
                .unwrap_or_else(|| spec.agents.selector.clone()),
            agent_port: self.args.agent_port.unwrap_or(spec.agents.port),
        }
    }
}

/// The objects of the newest render (none before the first).
fn newest_store(snapshots: &watch::Receiver<Option<Arc<Snapshot>>>) -> Arc<Store> {
    snapshots
        .borrow()
        .as_ref()
        .map(|s| Arc::clone(&s.store))
        .unwrap_or_default()
}

/// The start spec's tests, once the first render gives them objects to run
/// against. A failure is reported (`Valid=False`, `TestFailed`) but cannot
/// be refused: there is no earlier configuration to keep.
async fn prove_start_tests(
    client: Client,
    namespace: String,
    name: String,
    spec: HawserConfigSpec,
    haproxy: Option<HaproxyBinary>,
    mut snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
) {
    if snapshots.wait_for(Option::is_some).await.is_err() {
        return;
    }
    let store = newest_store(&snapshots);
    let Ok(config) = spec.render_config() else {
        return;
    };
    let verdict = prove_tests(&config, &store, &spec.tests, haproxy.as_ref()).await;
    if let Err(refusal) = &verdict {
        warn!("HawserConfig {namespace}/{name}: {}", refusal.message);
    }
    // Only while this spec is still the one in force.
    let configs: Api<HawserConfig> = Api::namespaced(client.clone(), &namespace);
    if let Ok(Some(current)) = configs.get_opt(&name).await
        && current.spec != spec
    {
        return;
    }
    if let Err(e) = report_config(client, &namespace, &name, &verdict).await {
        warn!("cannot write the HawserConfig status: {e}");
    }
}

/// Replaces `current` when `next` differs; says whether it did.
fn replace_if_new<T: PartialEq>(current: &mut T, next: T) -> bool {
    if *current == next {
        return false;
    }
    *current = next;
    true
}

fn parse_key(text: &str, what: &str) -> anyhow::Result<ObjectKey> {
    match text.split_once('/') {
        Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() => {
            Ok(ObjectKey::new(namespace, name))
        }
        _ => Err(UsageError(anyhow::anyhow!("{what}: {text:?} is not namespace/name")).into()),
    }
}
