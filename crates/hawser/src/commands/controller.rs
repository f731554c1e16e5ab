//! `hawser controller`: render every change and push it to the agents over
//! mutual TLS 1.3. The objects come from a manifests directory (agents
//! given with --agent, this controller always leading at --epoch) or from
//! the cluster (--kubernetes: agents discovered by label, a leader elected
//! on a Lease, Ingress status written, the admission webhook served).

mod cluster;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::admin::{self, AdminState};
use crate::metrics::Metrics;
use anyhow::Context as _;
use hawser_controller::cycle::ControllerStatus;
use hawser_controller::fleet::{AgentTarget, ClientTls, Fleet, FleetConfig};
use hawser_controller::local::run_local;
use hawser_controller::quarantine::Judge;
use hawser_haproxy::HaproxyBinary;
use hawser_pki::Role;
use hawser_pki::tls::{CheckedChains, SharedMaterial, client_config, watch_dir};
use hawser_render::{RenderConfig, Renderer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{error, info, warn};

use super::tasks::{SHUTDOWN_GRACE, Tasks};
use super::{UsageError, input};
use crate::cli::ControllerArgs;

const TLS_POLL: Duration = Duration::from_secs(5);
/// How often each link looks again at an agent it could not reach, and
/// re-checks the open connection against the trust of the moment.
const RETRY: Duration = Duration::from_secs(1);

pub async fn run(args: &ControllerArgs) -> anyhow::Result<ExitCode> {
    let cluster = if args.kubernetes {
        Some(cluster::Cluster::connect(&args.cluster).await?)
    } else {
        if args.agents.is_empty() {
            return Err(UsageError(anyhow::anyhow!(
                "--manifests needs at least one --agent ADDR"
            ))
            .into());
        }
        None
    };
    // In a cluster, a HawserConfig that does not render is waited out (its
    // Valid condition says why): the defaults stand in where a configuration
    // is needed, and nothing renders or is pushed until a valid one comes.
    let (config, config_valid) = match (&cluster, &args.config) {
        (Some(cluster), _) => match cluster.render_config() {
            Ok(config) => (config, true),
            Err(e) => {
                warn!("{e}; waiting for a valid one, rendering and pushing nothing meanwhile");
                (RenderConfig::default(), false)
            }
        },
        (None, Some(path)) => (input::read_config(path)?, true),
        (None, None) => (RenderConfig::default(), true),
    };
    let default_certificate = match &cluster {
        // Every replica must push the same one: it lives in a Secret.
        Some(cluster) => cluster.default_certificate(&args.cluster).await?,
        None => {
            std::fs::create_dir_all(&args.state_dir).with_context(|| {
                format!("cannot create --state-dir {}", args.state_dir.display())
            })?;
            super::run::default_certificate(&args.state_dir)?
        }
    };
    // The controller's own render (diagnostics, change detection); agents get
    // renders for their own settings.
    let renderer = Renderer::new(config.clone())
        .map_err(|e| UsageError(e.into()))?
        .with_default_certificate(default_certificate.clone());

    let (material, _tls_watch) = watch_dir(&args.tls_dir, Role::Controller, TLS_POLL);
    let (leader_tx, leader) = watch::channel(cluster.is_none().then_some(args.epoch));
    let fleet = Fleet::start(FleetConfig {
        agents: args
            .agents
            .iter()
            .map(|&addr| AgentTarget { addr })
            .collect(),
        tls: client_tls(&material, &args.agent_name),
        render: config.clone(),
        default_certificate: default_certificate.clone(),
        leader,
        controller: args.controller_name.clone(),
        retry: RETRY,
    })
    .map_err(|e| UsageError(e.into()))?;

    let admin_listener = TcpListener::bind(args.admin)
        .await
        .with_context(|| format!("cannot listen on --admin {}", args.admin))?;
    let (controller_tx, controller_rx) = watch::channel(ControllerStatus::default());
    // Once, at start: how much of the sandbox around checks this kernel enforces.
    hawser_haproxy::sandbox::announce();
    let metrics = Arc::new(Metrics::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let mut tasks = Tasks::new(stop_rx.clone());
    // A link or follower of the fleet that ends while it runs is fatal.
    tasks.spawn_until_stop("fleet", fleet.failure());
    tasks.spawn_until_stop(
        "metrics_fleet",
        Arc::clone(&metrics).follow_fleet(fleet.status()),
    );
    tasks.spawn_until_stop(
        "metrics_renders",
        Arc::clone(&metrics).follow_renders(controller_rx.clone()),
    );
    // Ends at once over a manifests directory, where nobody elects a leader.
    tasks.spawn_job(
        "metrics_leader",
        Arc::clone(&metrics).follow_leader(leader_tx.subscribe()),
    );
    tasks.spawn_until_stop(
        "metrics_certificate",
        Arc::clone(&metrics).follow_certificate(material.clone()),
    );
    let admin_addr = admin_listener.local_addr()?;
    let admin = admin::serve(
        admin_listener,
        AdminState {
            agent: None,
            fleet: Some(fleet.status()),
            tls: Some(material),
            controller: controller_rx,
            metrics,
        },
        stopped(stop_rx.clone()),
    );
    tasks.spawn("admin", async move {
        if let Err(e) = admin.await {
            error!("the admin listener failed: {e}");
        }
    });

    let main = async {
        match cluster {
            None => {
                let manifests = args
                    .manifests
                    .clone()
                    .context("--manifests or --kubernetes is required")?;
                info!(
                    "hawser controller: manifests {}, {} agent(s), epoch {}, admin http://{admin_addr}",
                    manifests.display(),
                    args.agents.len(),
                    args.epoch,
                );
                drop(leader_tx);
                // Checked before it is pushed when HAProxy is at hand (agents
                // check what they stage either way).
                let judge = HaproxyBinary::locate().ok().map(Judge::render_gate);
                let source = run_local(
                    manifests,
                    renderer,
                    fleet.sink(),
                    hawser_plan::Generation::new(1),
                    judge,
                    controller_tx,
                    stopped(stop_rx.clone()),
                );
                tokio::select! {
                    result = source => result.map_err(anyhow::Error::from),
                    () = super::shutdown_signal() => Ok(()),
                }
            }
            Some(cluster) => {
                info!(
                    "hawser controller: cluster namespace {}, admin http://{admin_addr}",
                    cluster.namespace
                );
                let started = cluster::Started {
                    renderer: config_valid.then_some(renderer),
                    config,
                    default_certificate,
                    leader: leader_tx,
                    controller: controller_tx,
                    stop: stop_rx.clone(),
                };
                // On a signal the loops are told to stop and given their grace
                // (the Lease is released, the webhook closes) before the rest.
                let run = cluster.run(args, &fleet, started);
                tokio::pin!(run);
                tokio::select! {
                    result = &mut run => result,
                    () = super::shutdown_signal() => {
                        let _ = stop_tx.send(true);
                        tokio::time::timeout(SHUTDOWN_GRACE * 2, run)
                            .await
                            .unwrap_or(Ok(()))
                    }
                }
            }
        }
    };
    let result = tasks.run_until(main).await;
    let _ = stop_tx.send(true);
    tasks.drain(SHUTDOWN_GRACE).await;
    fleet.stop().await;
    let result = match result {
        Ok(result) => result,
        Err(ended) => Err(ended.into()),
    };
    result.map(|()| ExitCode::SUCCESS)
}

/// The fleet's TLS: this controller's identity and trust, reloaded with
/// the tls directory; links reconnect when its revision changes.
fn client_tls(material: &SharedMaterial, agent_name: &str) -> ClientTls {
    let (revision_tx, revision) = watch::channel(revision_of(material));
    let follow = material.clone();
    tokio::spawn(async move {
        let mut changes = follow.subscribe();
        while changes.changed().await.is_ok() {
            revision_tx.send_replace(revision_of(&follow));
        }
    });
    let expected = agent_name.to_string();
    let trusted = material.clone();
    // Checked before every push: a chain found valid is not validated
    // again until its first deadline or a new revision.
    let checked = CheckedChains::default();
    ClientTls {
        config: client_config(material.clone(), agent_name.to_string()),
        agent_name: agent_name.to_string(),
        revision,
        recheck: Arc::new(move |chain| {
            let current = trusted
                .current()
                .ok_or("the controller has no valid tls material")?;
            checked
                .verify_server_chain(&current, chain, &expected, SystemTime::now())
                .map_err(|e| e.to_string())
        }),
    }
}

fn revision_of(material: &SharedMaterial) -> String {
    material
        .current()
        .map(|m| m.revision().to_string())
        .unwrap_or_default()
}
