//! Split mode: `hawser agent` beside HAProxy, `hawser controller` pushing to agents.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::InputArgs;

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
pub struct ControllerArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// An agent to push to, HOST:PORT; repeat for each.
    #[arg(long = "agent", value_name = "ADDR", required = true)]
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
    /// This controller's leader epoch; agents refuse pushes from a lower one.
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
}
