//! `hawser agent`: beside HAProxy, serving the controller over mutual TLS
//! 1.3, and liveness/state over a local Unix socket that needs no
//! certificate.

mod local;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use super::tasks::{SHUTDOWN_GRACE, Tasks};
use crate::admin::{self, AdminState};
use crate::metrics::Metrics;
use anyhow::Context as _;
use hawser_agent::control::{ControlConfig, ControlService, PeerCheck};
use hawser_agent::{Agent, AgentConfig, AgentHandle, AgentPaths, HaproxyMode, TreeStore};
use hawser_haproxy::HaproxyBinary;
use hawser_pki::Role;
use hawser_pki::tls::{CheckedChains, SharedMaterial, server_config, watch_dir};
use hawser_proto::transport;
use hawser_render::AGENT_SETTINGS;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{error, info};

use super::UsageError;
use crate::cli::{AgentArgs, AgentCommand, AgentServeArgs};

/// How often the tls directory is re-read even without a change event.
const TLS_POLL: Duration = Duration::from_secs(5);
/// How long the control server's calls may finish after SIGTERM/SIGINT.
const CONTROL_DRAIN: Duration = Duration::from_secs(2);
/// How long an Apply waits for its outcome (or its change live at runtime)
/// before answering `scheduled`.
const APPLY_WAIT: Duration = Duration::from_secs(30);

pub async fn run(args: &AgentArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        Some(AgentCommand::Health(local)) => {
            let reply = local::ask(&local::socket_path(&local.state_dir), "health").await?;
            print!("{reply}");
            Ok(if reply.starts_with("ok") {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Some(AgentCommand::State(local)) => {
            print!(
                "{}",
                local::ask(&local::socket_path(&local.state_dir), "state").await?
            );
            Ok(ExitCode::SUCCESS)
        }
        None => serve(&args.serve).await.map(|()| ExitCode::SUCCESS),
    }
}

async fn serve(args: &AgentServeArgs) -> anyhow::Result<()> {
    let (Some(listen), Some(tls_dir)) = (args.listen, args.tls_dir.as_ref()) else {
        return Err(UsageError(anyhow::anyhow!("--listen and --tls-dir are required")).into());
    };
    std::fs::create_dir_all(&args.state_dir)
        .with_context(|| format!("cannot create --state-dir {}", args.state_dir.display()))?;
    let state_dir = args.state_dir.canonicalize()?;
    let paths = AgentPaths::new(&state_dir);
    let render_settings = render_settings(args, &paths)?;

    // Certificates are not needed to run: without valid ones, management
    // calls are refused and HAProxy keeps serving.
    let (material, _tls_watch) = watch_dir(tls_dir, Role::Agent, TLS_POLL);

    let haproxy = HaproxyBinary::locate()?;
    // Once, at start: how much of the sandbox around checks this kernel enforces.
    hawser_haproxy::sandbox::announce();
    let version = haproxy.version().to_string();
    let mut config = AgentConfig::new(paths.clone(), haproxy);
    config.mode = if args.spawn_haproxy {
        HaproxyMode::Spawn
    } else {
        HaproxyMode::Attach
    };
    config.health = args
        .health_port
        .map(|port| SocketAddr::new(probe_ip(&render_settings), port));
    config.min_reload_interval = Duration::from_millis(args.min_reload_interval_ms);
    config.drift_interval = Duration::from_secs(args.drift_interval_secs);
    config.stop_grace = Duration::from_secs(args.stop_grace_secs);
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on --listen {listen}"))?;
    let admin_listener = match args.admin {
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on --admin {addr}"))?,
        ),
        None => None,
    };

    // The local socket answers from the start: when attached, HAProxy (in
    // another container) starts only once this agent has staged its
    // bootstrap version and answers its startup probe.
    std::fs::create_dir_all(paths.run())
        .with_context(|| format!("cannot create {}", paths.run().display()))?;
    let started: Arc<OnceLock<(AgentHandle, ControlService)>> = Arc::new(OnceLock::new());
    let _local = local::serve(
        &local::socket_path(&state_dir),
        health_answer(Arc::clone(&started)),
        state_answer(Arc::clone(&started), material.clone()),
    )?;

    let agent = Agent::start(config).await?;
    let handle = agent.handle();

    let controller_name = args.controller_name.clone();
    let trusted = material.clone();
    // Checked with every call and every state sent: a chain found valid is
    // not validated again until its first deadline or a new revision.
    let checked = CheckedChains::default();
    let peer_check: PeerCheck = Arc::new(move |chain| {
        let current = trusted
            .current()
            .ok_or("the agent has no valid tls material; management calls are refused")?;
        let chain = chain.ok_or("no client certificate")?;
        checked
            .verify_client_chain(&current, chain, &controller_name, SystemTime::now())
            .map_err(|e| e.to_string())
    });
    let control = ControlService::new(
        handle.clone(),
        &TreeStore::open(paths.tree())?,
        version,
        ControlConfig {
            agent: args.agent_name.clone(),
            render_settings,
            epoch_file: state_dir.join("epoch"),
            apply_wait: APPLY_WAIT,
            peer_check,
        },
    );
    let _ = started.set((handle.clone(), control.clone()));
    let (stop_tx, stop_rx) = watch::channel(false);
    // No controller in this process: its status stays empty (kept open so
    // the metrics keep following the agent).
    let (_no_controller, controller_rx) = admin::no_controller();
    let mut tasks = Tasks::new(stop_rx.clone());
    // The apply loop ending on its own would leave pushes unapplied.
    tasks.spawn_until_stop("agent_apply", handle.ended());
    if let Some(listener) = admin_listener {
        let metrics = Arc::new(Metrics::new());
        tasks.spawn_until_stop(
            "metrics",
            Arc::clone(&metrics).follow(handle.clone(), controller_rx.clone()),
        );
        tasks.spawn_until_stop(
            "metrics_certificate",
            Arc::clone(&metrics).follow_certificate(material.clone()),
        );
        let mut stop = stop_rx.clone();
        let admin = admin::serve(
            listener,
            AdminState {
                agent: Some(handle.clone()),
                fleet: None,
                tls: Some(material.clone()),
                controller: controller_rx,
                metrics,
            },
            async move {
                let _ = stop.wait_for(|s| *s).await;
            },
        );
        tasks.spawn("admin", async move {
            if let Err(e) = admin.await {
                error!("the admin listener failed: {e}");
            }
        });
    }

    info!(
        "hawser agent {}: control on {listen} (mutual TLS 1.3), state {}, tls {}",
        args.agent_name,
        state_dir.display(),
        tls_dir.display()
    );
    let (signalled_tx, mut signalled) = watch::channel(false);
    let server = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(20)))
        .add_service(control.into_server())
        .serve_with_incoming_shutdown(
            transport::incoming(
                listener,
                server_config(material, args.controller_name.clone()),
            ),
            async move {
                let _ = signalled.wait_for(|s| *s).await;
            },
        );
    // A graceful shutdown waits for every open stream, and the controller's
    // WatchState stream never ends on its own: past CONTROL_DRAIN the server
    // is dropped, so that a spawned HAProxy's soft stop is not held back
    // until the kubelet's SIGKILL. An Apply cut there is still applied (the
    // apply loop is apart) or reconciled by the controller later.
    let serving = async move {
        tokio::pin!(server);
        tokio::select! {
            result = &mut server => result,
            () = async {
                super::shutdown_signal().await;
                let _ = signalled_tx.send(true);
                tokio::time::sleep(CONTROL_DRAIN).await;
            } => {
                info!("the control server's connections outlived the grace; closing them");
                Ok(())
            }
        }
    };
    let result = tasks.run_until(serving).await;
    info!("stopping");
    let _ = stop_tx.send(true);
    tasks.drain(SHUTDOWN_GRACE).await;
    agent.shutdown().await?;
    result?.context("the control server failed")
}

fn health_answer(started: Arc<OnceLock<(AgentHandle, ControlService)>>) -> local::HealthFn {
    Arc::new(move || match started.get() {
        None => "phase=starting".to_string(),
        Some((handle, _)) => {
            let status = handle.status().borrow().clone();
            format!(
                "phase={} applied={}",
                status.phase.as_str(),
                status.applied_generation.unwrap_or_default()
            )
        }
    })
}

fn state_answer(
    started: Arc<OnceLock<(AgentHandle, ControlService)>>,
    tls: SharedMaterial,
) -> local::StateFn {
    Arc::new(move || {
        let Some((handle, control)) = started.get() else {
            return serde_json::json!({ "phase": "starting", "tls": tls.status() });
        };
        let state = control.state();
        serde_json::json!({
            "agent": state.agent,
            "instance": state.instance,
            "epoch": state.epoch,
            "desiredGeneration": state.desired_generation,
            "appliedGeneration": state.applied_generation,
            "planDigest": state.plan_digest,
            "files": state.files.len(),
            "haproxyVersion": state.haproxy_version,
            "reloadPending": state.reload_pending,
            "status": *handle.status().borrow(),
            "tls": tls.status(),
        })
    })
}

/// What the controller must render for this agent: its own socket paths,
/// its health port, and the `--set` overrides.
fn render_settings(
    args: &AgentServeArgs,
    paths: &AgentPaths,
) -> anyhow::Result<BTreeMap<String, String>> {
    let text = |p: std::path::PathBuf| {
        p.to_str()
            .map(str::to_string)
            .with_context(|| format!("{} is not UTF-8", p.display()))
    };
    let mut settings = BTreeMap::new();
    settings.insert("runtimeSocket".to_string(), text(paths.runtime_socket())?);
    settings.insert(
        "serverStateFile".to_string(),
        text(paths.server_state_file())?,
    );
    if let Some(port) = args.health_port {
        settings.insert("healthPort".to_string(), port.to_string());
    }
    for pair in &args.settings {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(UsageError(anyhow::anyhow!("--set {pair:?}: expected KEY=VALUE")).into());
        };
        if !AGENT_SETTINGS.contains(&key) || key == "runtimeSocket" || key == "serverStateFile" {
            return Err(UsageError(anyhow::anyhow!(
                "--set {key}: not a setting an agent may set (bindAddress, httpPort, httpsPort, healthPort)"
            ))
            .into());
        }
        let mut check = hawser_render::Settings::default();
        check
            .set_agent_setting(key, value)
            .map_err(|e| UsageError(anyhow::anyhow!("--set {e}")))?;
        settings.insert(key.to_string(), value.to_string());
    }
    Ok(settings)
}

fn probe_ip(settings: &BTreeMap<String, String>) -> IpAddr {
    settings
        .get("bindAddress")
        .and_then(|a| a.parse::<IpAddr>().ok())
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}
