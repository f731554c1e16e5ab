//! The command line, documented by `hawser --help` and `hawser <command> --help`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod split;
pub use split::{AgentArgs, AgentCommand, AgentServeArgs, ClusterArgs, ControllerArgs};

/// hawser: a template-driven HAProxy ingress controller for Kubernetes.
///
/// It renders HAProxy configuration from Kubernetes objects (Ingress, Service,
/// EndpointSlice, Secret), validates it with the real HAProxy and serves it.
/// Locally it works over a directory of ordinary Kubernetes manifests.
#[derive(Debug, Parser)]
#[command(name = "hawser", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// What is logged when HAWSER_LOG is unset: `info`, except for commands
    /// whose output is a report (`test`), where only warnings would add to it.
    pub fn default_log_level(&self) -> &'static str {
        match self.command {
            Command::Test(_) | Command::SupportBundle(_) => "warn",
            _ => "info",
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render haproxy.cfg, maps, certificates and the crt-list into a directory.
    ///
    /// Paths inside the output are relative to it, as HAProxy reads them with
    /// `-C <out>`. Rejected objects are reported and left out; the rest renders.
    Render(RenderArgs),
    /// Render into a temporary tree and check it with `haproxy -c`.
    ///
    /// Exits non-zero when a manifest is malformed, an object is rejected, or
    /// HAProxy refuses the configuration (its message and the object at fault
    /// are printed).
    Validate(InputArgs),
    /// Print the Gateway API status the manifests give: per GatewayClass,
    /// Gateway (each listener's attached routes and conditions) and route
    /// (each parent's Accepted and ResolvedRefs, with the reason and what to
    /// change), and which Ingresses are served, ignored or rejected.
    ///
    /// `--output json` prints the status stanzas the controller writes in a
    /// cluster. Exits 0 whatever the status says, 64 for an invalid config
    /// or an unreadable --manifests; malformed manifests are reported with
    /// their file and line.
    Status(StatusArgs),
    /// Say what becomes of each Ingress moved to hawser from ingress-nginx
    /// or haproxytech's controller: every annotation served as it is,
    /// served with a difference (said), ignored, or refused (why), and
    /// whether the Ingress would be served at all; then a summary.
    ///
    /// Reads a manifests directory, or the cluster (`--kubernetes`). Every
    /// Ingress is judged as if its class were hawser's. `--tests FILE`
    /// writes a config file of `hawser test` cases (one per host and path)
    /// to prove the cut-over against the real HAProxy first. Exits 1 when
    /// an Ingress would be refused or would lose access control, 0
    /// otherwise, 64 for an invalid config or an unreadable --manifests.
    Migrate(MigrateArgs),
    /// Prove the config's validation tests (its `tests:` list) against the
    /// real HAProxy.
    ///
    /// Renders the manifests, stands an echo backend in for every Service the
    /// routes use, serves the render with a private HAProxy on a loopback
    /// address and free ports, sends each test's request and compares the
    /// status and the Service that answered. Prints PASS or FAIL per test and
    /// a summary.
    /// Exits 0 when every test passes, 1 when one fails or HAProxy cannot
    /// serve the render, 64 for an invalid config or an unknown --test.
    Test(TestArgs),
    /// Serve a manifests directory: watch it, render every change, and apply it
    /// to an HAProxy this process starts, runtime API first, reloads verified.
    ///
    /// Keeps serving the last good version on any error. `--admin` serves
    /// /healthz, /readyz, /status (JSON) and /metrics (Prometheus).
    Run(RunArgs),
    /// Serve the built-in example: echo backends and HAProxy on local ports.
    ///
    /// Prints curl commands to try, then edits a manifest to show a change
    /// applied live. Needs HAProxy >= 3.0 (HAWSER_HAPROXY or PATH).
    Demo(DemoArgs),
    /// Run an echo backend: answers every request with JSON describing it.
    ///
    /// The JSON counts and hashes the request body (`body_bytes`,
    /// `body_sha256`), read whole however large. A WebSocket upgrade gets a
    /// WebSocket that echoes every message; a gRPC call with `x-echo-stream:
    /// 1` gets each message back as it arrives, then `grpc-status: 0`.
    Echo(EchoArgs),
    /// The certificates the controller and agents authenticate each other with.
    Certs(CertsArgs),
    /// Run beside HAProxy: apply what the controller pushes over mutual TLS
    /// 1.3, never leaving HAProxy on a configuration it cannot load.
    ///
    /// `hawser agent health` and `hawser agent state` ask a running agent
    /// over its local socket, with no certificate involved.
    Agent(AgentArgs),
    /// Render every change and push each render to the agents over mutual
    /// TLS 1.3: from a manifests directory to the agents given with --agent,
    /// or from the cluster (--kubernetes) to the agents found by label, by
    /// the leader elected on a Lease.
    ///
    /// Only the files an agent lacks travel. `--admin` serves /healthz,
    /// /readyz, /status (per-agent state) and /metrics.
    Controller(Box<ControllerArgs>),
    /// Collect what support needs from a running `hawser run` or `hawser
    /// agent` into one JSON document: /status and /metrics from --admin,
    /// the last apply outcomes, the served tree's manifest (paths, kinds,
    /// sizes, digests: never a file's content, so no key material), and
    /// HAProxy's `show info` and `show proc` from the sockets under
    /// --state-dir.
    ///
    /// Every source has a few seconds; one that fails is recorded in the
    /// bundle with its error and the rest is still written. In the chart:
    /// `kubectl exec POD -c agent -- hawser support-bundle --state-dir
    /// /var/run/hawser/state --admin 127.0.0.1:9182 > bundle.json`.
    /// Exits 0 when anything was collected, 1 when nothing was.
    SupportBundle(SupportBundleArgs),
    /// Print the HawserConfig CustomResourceDefinition (what deploy/crds holds).
    Crd,
    /// Stop HAProxy softly within a deadline: the preStop hook of HAProxy's
    /// container in the chart.
    ///
    /// Waits --wait-before seconds (HAProxy keeps serving while endpoints
    /// and load balancers forget the pod), sends the master found through
    /// --master-socket SIGUSR1 (stop accepting, finish what is in flight),
    /// waits until it is gone, and sends SIGTERM (every connection closed)
    /// if it is still there after --drain seconds. Exits 0 when HAProxy
    /// finished its connections, 3 when it had to be hard-stopped, 1 when
    /// it could not be stopped or found, 64 for invalid arguments.
    HaproxyStop(HaproxyStopArgs),
}

#[derive(Debug, Args)]
pub struct HaproxyStopArgs {
    /// HAProxy's master CLI socket (its -S argument).
    #[arg(long)]
    pub master_socket: PathBuf,
    /// Seconds to wait, HAProxy still serving, before stopping it.
    #[arg(long = "wait-before", default_value_t = 0, value_name = "SECS")]
    pub wait_before_secs: u64,
    /// Seconds HAProxy may take to finish its connections after the soft
    /// stop before it is hard-stopped.
    #[arg(long = "drain", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub drain_secs: u64,
    /// Seconds a hard-stopped HAProxy may take to leave.
    #[arg(long = "hard-stop-wait", default_value_t = 3, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub hard_stop_wait_secs: u64,
}

#[derive(Debug, Args)]
pub struct CertsArgs {
    #[command(subcommand)]
    pub command: CertsCommand,
}

#[derive(Debug, Subcommand)]
pub enum CertsCommand {
    /// Create the CA and both identities where they are missing (idempotent).
    Bootstrap(CertsOptions),
    /// Create what is missing, renew what is due (30 days left, or a third of
    /// a lifetime under 90 days), rotate the CA with a one-hour overlap, and
    /// finish a run that was interrupted.
    Renew(RenewArgs),
    /// Print each certificate's expiry; exit 1 if one expires within 30 days
    /// or cannot be read.
    Check(CertsOptions),
}

#[derive(Debug, Args)]
pub struct RenewArgs {
    #[command(flatten)]
    pub options: CertsOptions,
    /// Rotate the CA now, even if it is not due (a suspected compromise, or to
    /// rehearse a rotation); the identities follow with the one-hour overlap.
    /// Rerunning an interrupted rotation finishes it rather than starting another.
    #[arg(long)]
    pub rotate_ca: bool,
}

#[derive(Debug, Args)]
pub struct CertsOptions {
    #[command(flatten)]
    pub store: CertsStoreArgs,
    /// Namespace of the Secrets with --kubernetes [default: the kubeconfig
    /// context's; in a Pod without a kubeconfig, the Pod's own].
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub namespace: Option<String>,
    /// Secret holding the CA, its key and the generation.
    #[arg(long, default_value = "hawser-agent-issuer")]
    pub issuer_secret: String,
    /// Secret holding the agents' identity.
    #[arg(long, default_value = "hawser-agent-identity")]
    pub agent_secret: String,
    /// Secret holding the controller's identity.
    #[arg(long, default_value = "hawser-controller-identity")]
    pub controller_secret: String,
    /// DNS name (SAN) of the agent certificate.
    #[arg(long, default_value = "hawser-agent")]
    pub agent_name: String,
    /// DNS name (SAN) of the controller certificate.
    #[arg(long, default_value = "hawser-controller")]
    pub controller_name: String,
    /// Lifetime of new certificates, in days (1 to 3650).
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub validity_days: u32,
}

/// Where the Secrets live: exactly one of `--store DIR` or `--kubernetes`.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct CertsStoreArgs {
    /// Directory of Secrets: one subdirectory per Secret, its keys as files.
    #[arg(long, env = "HAWSER_CERTS_STORE")]
    pub store: Option<PathBuf>,
    /// Keep the Secrets in Kubernetes (Opaque Secrets labelled
    /// app.kubernetes.io/managed-by=hawser), through the in-cluster service
    /// account or the kubeconfig. Writes are compare-and-swap: a run that
    /// loses to a concurrent one stops without overwriting it.
    #[arg(long)]
    pub kubernetes: bool,
}

/// Where the objects and the configuration come from.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Directory of Kubernetes YAML manifests, read recursively.
    #[arg(long, env = "HAWSER_MANIFESTS")]
    pub manifests: PathBuf,
    /// hawser configuration file (settings, template overrides, snippets,
    /// validation tests).
    #[arg(long, env = "HAWSER_CONFIG")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// `text` for people, `json` for the Kubernetes status stanzas.
    #[arg(long, value_enum, default_value_t = StatusOutput::Text)]
    pub output: StatusOutput,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Directory of Kubernetes YAML manifests, read recursively.
    #[arg(
        long,
        env = "HAWSER_MANIFESTS",
        required_unless_present = "kubernetes",
        conflicts_with = "kubernetes"
    )]
    pub manifests: Option<PathBuf>,
    /// Read the cluster instead (an in-cluster service account or a
    /// kubeconfig): Ingresses, IngressClasses, Services and the Secrets they
    /// name, of every namespace or of those given with --namespace.
    #[arg(long)]
    pub kubernetes: bool,
    /// With --kubernetes, read only this namespace (repeatable).
    #[arg(long = "namespace", value_name = "NAMESPACE", requires = "kubernetes")]
    pub namespaces: Vec<String>,
    /// hawser configuration file (settings, template overrides, snippets).
    #[arg(long, env = "HAWSER_CONFIG")]
    pub config: Option<PathBuf>,
    /// The controller the Ingresses come from: only its annotations (and
    /// hawser's) are read; by default every dialect of the setting
    /// annotationFrontends is.
    #[arg(long, value_enum)]
    pub from: Option<MigrateFrom>,
    /// Write `hawser test` cases proving each host and path to this file (a
    /// config file: `hawser test --manifests DIR --config FILE`).
    #[arg(long, value_name = "FILE")]
    pub tests: Option<PathBuf>,
    /// `text` for people, `json` for tools.
    #[arg(long, value_enum, default_value_t = StatusOutput::Text)]
    pub output: StatusOutput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MigrateFrom {
    /// ingress-nginx (`nginx.ingress.kubernetes.io/`).
    Nginx,
    /// haproxytech's controller (`haproxy.org/`).
    Haproxytech,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusOutput {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Run only the test of this name (repeatable); all tests by default.
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Output directory; created if missing. An existing one must hold a
    /// previous render (its haproxy.cfg), whose files are replaced.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Versioned trees, HAProxy's sockets and the agent's state. HAProxy runs
    /// with -C <state-dir>/tree/current.
    #[arg(long, env = "HAWSER_STATE_DIR", default_value = "hawser-state")]
    pub state_dir: PathBuf,
    /// Port for plain HTTP (overrides settings.httpPort).
    #[arg(long, env = "HAWSER_HTTP_PORT")]
    pub http_port: Option<u16>,
    /// Port for HTTPS (overrides settings.httpsPort).
    #[arg(long, env = "HAWSER_HTTPS_PORT")]
    pub https_port: Option<u16>,
    /// Address of the admin listener (/healthz, /readyz, /status, /metrics).
    #[arg(long, env = "HAWSER_ADMIN", default_value = "127.0.0.1:9180")]
    pub admin: SocketAddr,
    /// Port of HAProxy's health listener (/healthz: 200 once a rendered
    /// configuration serves, 503 before).
    #[arg(long, env = "HAWSER_HEALTH_PORT", default_value_t = 8404)]
    pub health_port: u16,
    /// Least time between two reloads, in milliseconds; runtime changes are not paced.
    #[arg(long, default_value_t = 1000)]
    pub min_reload_interval_ms: u64,
    /// How often live HAProxy state is compared with the applied version, in seconds.
    #[arg(long, default_value_t = 30)]
    pub drift_interval_secs: u64,
    /// On SIGTERM or SIGINT, how long HAProxy may finish the requests in
    /// flight after its soft stop (SIGUSR1) before it is killed, in seconds.
    /// `run` exits once every HAProxy process is gone.
    #[arg(long, env = "HAWSER_STOP_GRACE_SECS", default_value_t = 10)]
    pub stop_grace_secs: u64,
}

#[derive(Debug, Args)]
pub struct SupportBundleArgs {
    /// The state directory of the `hawser run` or `hawser agent` to read
    /// (HAProxy's sockets under run/, the versioned tree under tree/).
    #[arg(long, env = "HAWSER_STATE_DIR", default_value = "hawser-state")]
    pub state_dir: PathBuf,
    /// Its admin listener (`hawser run`: 127.0.0.1:9180; the chart's agent:
    /// 127.0.0.1:9182).
    #[arg(long, env = "HAWSER_ADMIN", default_value = "127.0.0.1:9180")]
    pub admin: SocketAddr,
    /// Where to write the bundle; `-` for stdout.
    #[arg(long, default_value = "-")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Port for plain HTTP.
    #[arg(long, default_value_t = 8080, env = "HAWSER_HTTP_PORT")]
    pub http_port: u16,
    /// Port for HTTPS.
    #[arg(long, default_value_t = 8443, env = "HAWSER_HTTPS_PORT")]
    pub https_port: u16,
    /// Where the example's manifests and the state go; a temporary directory by default.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Address of the admin listener (/healthz, /readyz, /status, /metrics).
    #[arg(long, default_value = "127.0.0.1:9180")]
    pub admin: SocketAddr,
    /// Port of HAProxy's health listener.
    #[arg(long, default_value_t = 8404)]
    pub health_port: u16,
}

#[derive(Debug, Args)]
pub struct EchoArgs {
    /// Address to listen on, e.g. 127.0.0.2:8080.
    #[arg(long, env = "HAWSER_ECHO_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Namespace reported in every answer.
    #[arg(long, env = "POD_NAMESPACE", default_value = "")]
    pub namespace: String,
    /// Pod name reported in every answer.
    #[arg(long, env = "POD_NAME", default_value = "")]
    pub pod: String,
    /// Service name reported in every answer.
    #[arg(long, env = "SERVICE_NAME", default_value = "")]
    pub service: String,
    /// Ingress name reported in every answer.
    #[arg(long, env = "INGRESS_NAME", default_value = "")]
    pub ingress: String,
    /// Serve over TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}
