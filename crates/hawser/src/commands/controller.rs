//! `hawser controller` over a manifests directory: render every change and
//! push it to a static list of agents over mutual TLS 1.3 (Kubernetes
//! sources and agent discovery come with the cluster mode).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use hawser_controller::admin::{self, AdminState};
use hawser_controller::fleet::{AgentTarget, ClientTls, Fleet, FleetConfig};
use hawser_controller::local::{ControllerStatus, run_local};
use hawser_controller::metrics::Metrics;
use hawser_pki::Role;
use hawser_pki::tls::{client_config, verify_server_chain, watch_dir};
use hawser_render::{RenderConfig, Renderer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::info;

use super::{UsageError, input};
use crate::cli::ControllerArgs;

const TLS_POLL: Duration = Duration::from_secs(5);
/// How often each link looks again at an agent it could not reach, and
/// re-checks the open connection against the trust of the moment.
const RETRY: Duration = Duration::from_secs(1);

pub async fn run(args: &ControllerArgs) -> anyhow::Result<ExitCode> {
    let config = match &args.input.config {
        Some(path) => input::read_config(path)?,
        None => RenderConfig::default(),
    };
    std::fs::create_dir_all(&args.state_dir)
        .with_context(|| format!("cannot create --state-dir {}", args.state_dir.display()))?;
    let default_certificate = super::run::default_certificate(&args.state_dir)?;
    // The controller's own render (diagnostics, change detection); agents get
    // renders for their own settings.
    let renderer = Renderer::new(config.clone())
        .map_err(|e| UsageError(e.into()))?
        .with_default_certificate(default_certificate.clone());

    let (material, _tls_watch) = watch_dir(&args.tls_dir, Role::Controller, TLS_POLL);
    let (revision_tx, revision) = watch::channel(revision_of(&material));
    let follow = material.clone();
    tokio::spawn(async move {
        let mut changes = follow.subscribe();
        while changes.changed().await.is_ok() {
            revision_tx.send_replace(revision_of(&follow));
        }
    });
    let agent_name = args.agent_name.clone();
    let trusted = material.clone();
    let tls = ClientTls {
        config: client_config(material.clone(), args.agent_name.clone()),
        agent_name: args.agent_name.clone(),
        revision,
        recheck: Arc::new(move |chain| {
            let current = trusted
                .current()
                .ok_or("the controller has no valid tls material")?;
            verify_server_chain(&current, chain, &agent_name, SystemTime::now())
                .map_err(|e| e.to_string())
        }),
    };
    let fleet = Fleet::start(FleetConfig {
        agents: args
            .agents
            .iter()
            .map(|&addr| AgentTarget { addr })
            .collect(),
        tls,
        render: config,
        default_certificate,
        epoch: args.epoch,
        controller: args.controller_name.clone(),
        retry: RETRY,
    })
    .map_err(|e| UsageError(e.into()))?;

    let admin_listener = TcpListener::bind(args.admin)
        .await
        .with_context(|| format!("cannot listen on --admin {}", args.admin))?;
    info!(
        "hawser controller: manifests {}, {} agent(s), epoch {}, admin http://{}",
        args.input.manifests.display(),
        args.agents.len(),
        args.epoch,
        admin_listener.local_addr()?
    );
    let (controller_tx, controller_rx) = watch::channel(ControllerStatus::default());
    let metrics = Arc::new(Metrics::new());
    tokio::spawn(Arc::clone(&metrics).follow_fleet(fleet.status()));
    tokio::spawn(Arc::clone(&metrics).follow_renders(controller_rx.clone()));
    let expiry = tokio::spawn(Arc::clone(&metrics).follow_certificate(material.clone()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let admin_task = tokio::spawn(admin::serve(
        admin_listener,
        AdminState {
            agent: None,
            fleet: Some(fleet.status()),
            tls: Some(material),
            controller: controller_rx,
            metrics,
        },
        stopped(stop_rx.clone()),
    ));
    let source = run_local(
        args.input.manifests.clone(),
        renderer,
        fleet.sink(),
        1,
        controller_tx,
        stopped(stop_rx),
    );
    let result = tokio::select! {
        result = source => result.map_err(anyhow::Error::from),
        () = super::shutdown_signal() => Ok(()),
    };
    let _ = stop_tx.send(true);
    let _ = admin_task.await;
    fleet.stop().await;
    expiry.abort();
    result.map(|()| ExitCode::SUCCESS)
}

fn revision_of(material: &hawser_pki::tls::SharedMaterial) -> String {
    material
        .current()
        .map(|m| m.revision().to_string())
        .unwrap_or_default()
}
