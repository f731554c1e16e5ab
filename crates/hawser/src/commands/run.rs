//! `hawser run`: the local all-in-one. The controller watches a manifests
//! directory, an in-process agent applies every render to an HAProxy it
//! starts (or adopts after a crash), and an admin listener reports.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::admin::{self, AdminState};
use crate::metrics::Metrics;
use anyhow::Context as _;
use hawser_agent::{Agent, AgentConfig, AgentHandle, AgentPaths, Desired};
use hawser_controller::cycle::{ControllerStatus, CycleRender, Deliver};
use hawser_controller::gate;
use hawser_controller::local::run_local;
use hawser_controller::quarantine::Judge;
use hawser_haproxy::HaproxyBinary;
use hawser_render::{CertificatePem, RenderConfig, Renderer, generate_default_certificate};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{error, info};

use super::tasks::{SHUTDOWN_GRACE, Tasks};
use super::{UsageError, input};
use crate::cli::RunArgs;

/// `hawser run`'s sink: each render straight to the in-process agent. The
/// binary composes the roles; the controller does not know the agent.
#[derive(Debug, Clone)]
struct ToAgent(AgentHandle);

impl Deliver for ToAgent {
    fn deliver(&self, render: &CycleRender) {
        self.0.submit(Desired {
            generation: render.generation,
            files: Arc::clone(&render.rendered.files),
            plan: Arc::clone(&render.rendered.plan),
        });
    }
}

/// Everything `run` (and `demo`) needs, resolved from arguments.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub manifests: PathBuf,
    pub config: RenderConfig,
    pub state_dir: PathBuf,
    pub admin: SocketAddr,
    pub health_port: u16,
    pub min_reload_interval: Duration,
    pub drift_interval: Duration,
    /// How long HAProxy may drain after its soft stop on SIGTERM/SIGINT.
    pub stop_grace: Duration,
}

pub async fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mut config = match &args.input.config {
        Some(path) => input::read_config(path)?,
        None => RenderConfig::default(),
    };
    if let Some(port) = args.http_port {
        config.settings.http_port = port;
    }
    if let Some(port) = args.https_port {
        config.settings.https_port = port;
    }
    let options = RunOptions {
        manifests: args.input.manifests.clone(),
        config,
        state_dir: args.state_dir.clone(),
        admin: args.admin,
        health_port: args.health_port,
        min_reload_interval: Duration::from_millis(args.min_reload_interval_ms),
        drift_interval: Duration::from_secs(args.drift_interval_secs),
        stop_grace: Duration::from_secs(args.stop_grace_secs),
    };
    serve(options, |_| async {}).await?;
    Ok(ExitCode::SUCCESS)
}

/// Runs until SIGINT/SIGTERM; `on_start` runs once everything is started.
pub async fn serve<F, Fut>(options: RunOptions, on_start: F) -> anyhow::Result<()>
where
    F: FnOnce(AgentHandle) -> Fut,
    Fut: Future<Output = ()>,
{
    std::fs::create_dir_all(&options.state_dir)
        .with_context(|| format!("cannot create --state-dir {}", options.state_dir.display()))?;
    let state_dir = options
        .state_dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", options.state_dir.display()))?;
    let paths = AgentPaths::new(&state_dir);

    let mut config = options.config.clone();
    config.settings.runtime_socket = Some(path_text(&paths.runtime_socket())?);
    config.settings.server_state_file = Some(path_text(&paths.server_state_file())?);
    config.settings.health_port = Some(options.health_port);
    let probe_ip = config
        .settings
        .bind_address
        .parse::<IpAddr>()
        .ok()
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let policy = gate::config_policy(&config);
    let renderer = Renderer::new(config)
        .map_err(|e| UsageError(e.into()))?
        .with_default_certificate(default_certificate(&state_dir)?);

    let haproxy = HaproxyBinary::locate()?;
    // Once, at start: how much of the sandbox around checks this kernel enforces.
    hawser_haproxy::sandbox::announce();
    let admin_listener = TcpListener::bind(options.admin)
        .await
        .with_context(|| format!("cannot listen on --admin {}", options.admin))?;
    let haproxy_for_gate = haproxy.clone();
    let mut agent_config = AgentConfig::new(paths, haproxy);
    agent_config.health = Some(SocketAddr::new(probe_ip, options.health_port));
    agent_config.min_reload_interval = options.min_reload_interval;
    agent_config.drift_interval = options.drift_interval;
    agent_config.stop_grace = options.stop_grace;
    let agent = Agent::start(agent_config).await?;
    let handle = agent.handle();
    info!(
        "hawser run: manifests {}, state {}, admin http://{}",
        options.manifests.display(),
        state_dir.display(),
        admin_listener.local_addr()?
    );

    let (controller_tx, controller_rx) = watch::channel(ControllerStatus::default());
    let metrics = Arc::new(Metrics::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let mut tasks = Tasks::new(stop_rx.clone());
    // The agent's apply loop ending on its own would leave renders unapplied.
    tasks.spawn_until_stop("agent_apply", handle.ended());
    tasks.spawn_until_stop(
        "metrics",
        Arc::clone(&metrics).follow(handle.clone(), controller_rx.clone()),
    );
    let admin = admin::serve(
        admin_listener,
        AdminState {
            agent: Some(handle.clone()),
            fleet: None,
            tls: None,
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
    let source = run_local(
        options.manifests.clone(),
        renderer,
        ToAgent(handle.clone()),
        handle.next_generation(),
        Some(Judge::gate(haproxy_for_gate, policy)),
        controller_tx,
        stopped(stop_rx),
    );
    let main = async {
        tokio::pin!(source);
        let on_start = on_start(handle);
        tokio::pin!(on_start);
        let shutdown = super::shutdown_signal();
        tokio::pin!(shutdown);
        let mut started = false;
        loop {
            tokio::select! {
                result = &mut source => break result.map_err(anyhow::Error::from),
                () = &mut on_start, if !started => started = true,
                () = &mut shutdown => break Ok(()),
            }
        }
    };
    let result = tasks.run_until(main).await;
    info!("stopping: HAProxy drains, then exits");
    let _ = stop_tx.send(true);
    tasks.drain(SHUTDOWN_GRACE).await;
    agent.shutdown().await?;
    result?
}

fn path_text(path: &Path) -> anyhow::Result<String> {
    path.to_str()
        .map(str::to_string)
        .with_context(|| format!("{} is not UTF-8", path.display()))
}

/// The generated default certificate is kept in the state directory, so a
/// restart serves the same one (and renders the same bytes).
pub fn default_certificate(state_dir: &Path) -> anyhow::Result<CertificatePem> {
    let path = state_dir.join("default-certificate.pem");
    if let Ok(pem) = std::fs::read(&path)
        && let Ok(cert) = CertificatePem::from_parts(&pem, &pem)
    {
        return Ok(cert);
    }
    let cert = generate_default_certificate().map_err(anyhow::Error::msg)?;
    write_private(&path, cert.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(cert)
}

fn write_private(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(content)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}
