//! Split mode: `hawser agent` beside HAProxy, `hawser controller` pushing to agents.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub command: Option<AgentCommand>,
    #[command(flatten)]
    pub serve: AgentServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Ask a running agent, over its local socket, whether it is alive
    /// (certificates play no part: an expired one never fails this).
    Health(AgentLocalArgs),
    /// Print a running agent's state as JSON, over its local socket.
    State(AgentLocalArgs),
}

#[derive(Debug, Args)]
pub struct AgentLocalArgs {
    /// The agent's state directory (its socket is <state-dir>/run/agent.sock).
    #[arg(long, env = "HAWSER_STATE_DIR", default_value = "hawser-state")]
    pub state_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct AgentServeArgs {
    /// Address the controller connects to (mutual TLS 1.3 only).
    #[arg(long, env = "HAWSER_AGENT_LISTEN", required = true)]
    pub listen: Option<SocketAddr>,
    /// Directory with tls.crt, tls.key, ca.crt and optionally previous-ca.crt
    /// and previous-ca-until (a mounted Secret); reloaded when it changes.
    #[arg(long, env = "HAWSER_TLS_DIR", required = true)]
    pub tls_dir: Option<PathBuf>,
    /// Versioned trees, HAProxy's sockets and the agent's state. HAProxy runs
    /// with -W -S <state-dir>/run/master.sock -C <state-dir>/tree/current -f haproxy.cfg.
    #[arg(long, env = "HAWSER_STATE_DIR", default_value = "hawser-state")]
    pub state_dir: PathBuf,
    /// Start HAProxy from this process (and restart it if it exits) instead
    /// of attaching to one started beside it.
    #[arg(long)]
    pub spawn_haproxy: bool,
    /// With --spawn-haproxy: on SIGTERM or SIGINT, how long HAProxy may
    /// finish the requests in flight after its soft stop (SIGUSR1) before it
    /// is killed, in seconds. The agent exits once every HAProxy process is
    /// gone. Attached, HAProxy is stopped by its own container.
    #[arg(long, env = "HAWSER_STOP_GRACE_SECS", default_value_t = 10)]
    pub stop_grace_secs: u64,
    /// The name (certificate SAN) this agent answers as.
    #[arg(long, env = "HAWSER_AGENT_NAME", default_value = "hawser-agent")]
    pub agent_name: String,
    /// The name (certificate SAN) the controller must present.
    #[arg(
        long,
        env = "HAWSER_CONTROLLER_NAME",
        default_value = "hawser-controller"
    )]
    pub controller_name: String,
    /// Port of HAProxy's health listener, probed after every reload.
    #[arg(long, env = "HAWSER_HEALTH_PORT")]
    pub health_port: Option<u16>,
    /// A setting this agent's configuration must be rendered with, KEY=VALUE:
    /// bindAddress, httpPort, httpsPort (socket paths are set by the agent).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
    /// Least time between two reloads, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub min_reload_interval_ms: u64,
    /// How often live HAProxy state is compared with the applied version, in seconds.
    #[arg(long, default_value_t = 30)]
    pub drift_interval_secs: u64,
    /// Address of an admin listener: /healthz, /readyz (a verified rendered
    /// configuration serves), /status and /metrics. None by default.
    #[arg(long, env = "HAWSER_ADMIN")]
    pub admin: Option<SocketAddr>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["manifests", "kubernetes"])))]
pub struct ControllerArgs {
    /// Directory of Kubernetes YAML manifests, read recursively and watched.
    #[arg(long, env = "HAWSER_MANIFESTS")]
    pub manifests: Option<PathBuf>,
    /// Read the objects from the cluster (in-cluster configuration or
    /// kubeconfig), find agents by label, elect a leader on a Lease.
    #[arg(long)]
    pub kubernetes: bool,
    /// hawser configuration file (settings, template overrides, snippets);
    /// with --kubernetes the HawserConfig resource is read instead.
    #[arg(long, env = "HAWSER_CONFIG", conflicts_with = "kubernetes")]
    pub config: Option<PathBuf>,
    /// An agent to push to, HOST:PORT; repeat for each (with --manifests).
    #[arg(long = "agent", value_name = "ADDR")]
    pub agents: Vec<SocketAddr>,
    /// Directory with tls.crt, tls.key, ca.crt and optionally previous-ca.crt
    /// and previous-ca-until (a mounted Secret); reloaded when it changes.
    #[arg(long, env = "HAWSER_TLS_DIR")]
    pub tls_dir: PathBuf,
    /// The name (certificate SAN) every agent must present.
    #[arg(long, env = "HAWSER_AGENT_NAME", default_value = "hawser-agent")]
    pub agent_name: String,
    /// The name (certificate SAN) this controller presents.
    #[arg(
        long,
        env = "HAWSER_CONTROLLER_NAME",
        default_value = "hawser-controller"
    )]
    pub controller_name: String,
    /// This controller's leader epoch with --manifests; agents refuse pushes
    /// from a lower one (with --kubernetes the Lease decides).
    #[arg(long, default_value_t = 1)]
    pub epoch: u64,
    /// Where the generated default certificate is kept.
    #[arg(
        long,
        env = "HAWSER_STATE_DIR",
        default_value = "hawser-controller-state"
    )]
    pub state_dir: PathBuf,
    /// Address of the admin listener (/healthz, /readyz, /status, /metrics).
    #[arg(long, env = "HAWSER_ADMIN", default_value = "127.0.0.1:9181")]
    pub admin: SocketAddr,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// What `hawser controller --kubernetes` needs besides the common flags.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// The controller's namespace (its HawserConfig, Lease and agents);
    /// the kubeconfig's or the pod's namespace by default.
    #[arg(long, env = "POD_NAMESPACE")]
    pub namespace: Option<String>,
    /// The HawserConfig to read in that namespace; defaults apply when it
    /// does not exist.
    #[arg(long, default_value = "hawser")]
    pub config_name: String,
    /// Label selector of the HAProxy pods (their agents); the HawserConfig's
    /// spec.agents.selector by default.
    #[arg(long)]
    pub agent_selector: Option<String>,
    /// The agents' control port; the HawserConfig's spec.agents.port by default.
    #[arg(long)]
    pub agent_port: Option<u16>,
    /// The Lease the controllers elect their leader on.
    #[arg(long, default_value = "hawser-controller")]
    pub lease_name: String,
    /// The Secret (in --namespace) holding the generated default
    /// certificate every replica serves; created when missing.
    #[arg(long, default_value = "hawser-default-certificate")]
    pub default_certificate_secret: String,
    /// This controller's identity in the election (the pod name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Address of the admission webhook (HTTPS); no webhook when unset.
    #[arg(long, requires = "webhook_tls_dir")]
    pub webhook_listen: Option<SocketAddr>,
    /// Directory with the webhook's tls.crt and tls.key (a mounted Secret).
    #[arg(long)]
    pub webhook_tls_dir: Option<PathBuf>,
    /// `namespace/name` of the Service whose load-balancer addresses go into
    /// the status of the Ingresses and Gateways hawser serves.
    #[arg(long)]
    pub publish_service: Option<String>,
}
