//! Split mode as processes: `hawser certs` for a PKI directory, `hawser
//! agent --spawn-haproxy` per agent (each with its own HAProxy on its own
//! ports), and `hawser controller` pushing to them.

use std::ffi::OsString;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::TIMEOUT;
use super::haproxy::{listen_address, two_free_ports};
use super::http::{self, Response};
use super::process::{ChildGuard, Finished, hawser_command, hawser_command_of, run_to_end};

/// A Secret-shaped certificate store made by `hawser certs bootstrap`.
#[derive(Debug)]
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    pub fn bootstrap() -> Pki {
        let dir = tempfile::Builder::new()
            .prefix("hawser-e2e-pki-")
            .tempdir()
            .expect("pki directory");
        let pki = Pki { dir };
        let done = pki.certs(&["bootstrap"]);
        assert!(
            done.status.success(),
            "certs bootstrap: {}",
            done.describe()
        );
        pki
    }

    /// Runs `hawser certs <args> --store <this>`.
    pub fn certs(&self, args: &[&str]) -> Finished {
        let mut command = hawser_command(["certs"]);
        command.args(args).arg("--store").arg(self.store());
        run_to_end(&mut command)
    }

    pub fn store(&self) -> &Path {
        self.dir.path()
    }

    /// The agents' identity Secret (a tls directory).
    pub fn agent_dir(&self) -> PathBuf {
        self.store().join("hawser-agent-identity")
    }

    /// The controller's identity Secret (a tls directory).
    pub fn controller_dir(&self) -> PathBuf {
        self.store().join("hawser-controller-identity")
    }

    /// A copy of the controller's identity in a plain directory, for tests
    /// that alter it.
    pub fn copy_controller_dir(&self, name: &str) -> PathBuf {
        copy_dir(
            &self.controller_dir(),
            &self.store().join(format!("test-{name}")),
        )
    }

    pub fn read(&self, secret: &str, key: &str) -> Vec<u8> {
        fs::read(self.store().join(secret).join(key)).expect("secret key")
    }
}

/// Copies the files of `from` (following its symlink) into a new `to`.
pub fn copy_dir(from: &Path, to: &Path) -> PathBuf {
    fs::create_dir_all(to).expect("create tls copy");
    for entry in fs::read_dir(from).expect("read tls dir") {
        let entry = entry.expect("entry");
        if entry.path().is_file() {
            fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
        }
    }
    to.to_path_buf()
}

/// `hawser agent --spawn-haproxy` with HAProxy on ports of its own.
#[derive(Debug)]
pub struct AgentProc {
    pub listen: SocketAddr,
    pub http: SocketAddr,
    pub health_port: u16,
    /// Its `--admin` listener (`/metrics`), when started with one.
    pub admin: Option<SocketAddr>,
    https_port: u16,
    tls_dir: PathBuf,
    state: tempfile::TempDir,
    extra_args: Vec<String>,
    /// Whether the agent starts HAProxy; otherwise [`AgentProc::start_haproxy`] does.
    spawn_haproxy: bool,
    process: Option<ChildGuard>,
    haproxy: Option<ChildGuard>,
    /// Another hawser binary than this build's.
    binary: Option<PathBuf>,
    /// More environment for the agent (a fake clock's, say).
    env: Vec<(&'static str, OsString)>,
}

impl AgentProc {
    /// An agent that attaches to an HAProxy started beside it, as in a pod.
    pub fn attach(tls_dir: &Path) -> AgentProc {
        AgentProc::launch(tls_dir, &[], false, None)
    }

    pub fn start(tls_dir: &Path) -> AgentProc {
        AgentProc::start_with(tls_dir, &[])
    }

    pub fn start_with(tls_dir: &Path, args: &[&str]) -> AgentProc {
        AgentProc::launch(tls_dir, args, true, None)
    }

    /// [`AgentProc::start`] of another hawser binary (`None`: this build's).
    pub fn start_with_binary(tls_dir: &Path, binary: Option<&Path>) -> AgentProc {
        AgentProc::launch(tls_dir, &[], true, binary)
    }

    /// [`AgentProc::start`] with an `--admin` listener for its `/metrics`,
    /// and more environment (inherited by the HAProxy it spawns).
    pub fn start_observed(
        tls_dir: &Path,
        args: &[&str],
        env: Vec<(&'static str, OsString)>,
    ) -> AgentProc {
        let ip = listen_address();
        let admin = SocketAddr::from((ip, two_free_ports(ip).0));
        let admin_arg = admin.to_string();
        let args: Vec<&str> = args
            .iter()
            .copied()
            .chain(["--admin", admin_arg.as_str()])
            .collect();
        let mut agent = AgentProc::launch_with_env(tls_dir, &args, true, None, env);
        agent.admin = Some(admin);
        agent
    }

    fn launch(
        tls_dir: &Path,
        args: &[&str],
        spawn_haproxy: bool,
        binary: Option<&Path>,
    ) -> AgentProc {
        AgentProc::launch_with_env(tls_dir, args, spawn_haproxy, binary, Vec::new())
    }

    fn launch_with_env(
        tls_dir: &Path,
        args: &[&str],
        spawn_haproxy: bool,
        binary: Option<&Path>,
        env: Vec<(&'static str, OsString)>,
    ) -> AgentProc {
        let ip = listen_address();
        let (listen, http) = two_free_ports(ip);
        let (https, health) = two_free_ports(ip);
        let state = tempfile::Builder::new()
            .prefix("hawser-e2e-agent-")
            .tempdir()
            .expect("agent state");
        let mut agent = AgentProc {
            listen: SocketAddr::from((ip, listen)),
            http: SocketAddr::from((ip, http)),
            health_port: health,
            admin: None,
            https_port: https,
            tls_dir: tls_dir.to_path_buf(),
            state,
            extra_args: args.iter().map(ToString::to_string).collect(),
            spawn_haproxy,
            process: None,
            haproxy: None,
            binary: binary.map(Path::to_path_buf),
            env,
        };
        agent.spawn();
        agent
    }

    /// Starts (again) on the same state directory: HAProxy is adopted.
    pub fn spawn(&mut self) {
        let mut command: Command = hawser_command_of(self.binary.as_deref(), ["agent"]);
        if !self
            .extra_args
            .iter()
            .any(|a| a == "--min-reload-interval-ms")
        {
            command.args(["--min-reload-interval-ms", "100"]);
        }
        command
            .arg("--listen")
            .arg(self.listen.to_string())
            .arg("--tls-dir")
            .arg(&self.tls_dir)
            .arg("--state-dir")
            .arg(self.state_dir())
            .args(self.spawn_haproxy.then_some("--spawn-haproxy"))
            .arg("--health-port")
            .arg(self.health_port.to_string())
            .arg("--set")
            .arg(format!("bindAddress={}", self.http.ip()))
            .arg("--set")
            .arg(format!("httpPort={}", self.http.port()))
            .arg("--set")
            .arg(format!("httpsPort={}", self.https_port))
            .args(&self.extra_args)
            .env("HAWSER_LOG", "info")
            .envs(self.env.iter().map(|(name, value)| (name, value)));
        self.process = Some(ChildGuard::spawn("hawser agent", &mut command));
    }

    /// HAProxy as the chart's haproxy container runs it, on this agent's state.
    pub fn start_haproxy(&mut self) {
        let state = self.state_dir();
        let mut command = Command::new(super::process::haproxy_binary());
        command
            .args(["-W", "-db", "-S"])
            .arg(state.join("run/master.sock"))
            .arg("-C")
            .arg(state.join("tree/current"))
            .args(["-f", "haproxy.cfg"]);
        self.haproxy = Some(ChildGuard::spawn("haproxy (attached)", &mut command));
    }

    /// HAProxy's master CLI socket, as the chart's haproxy container gives it (-S).
    pub fn master_socket(&self) -> PathBuf {
        self.state_dir().join("run/master.sock")
    }

    /// The pid of the HAProxy [`AgentProc::start_haproxy`] started.
    pub fn haproxy_pid(&self) -> Option<u32> {
        self.haproxy.as_ref().map(ChildGuard::pid)
    }

    /// Waits until the HAProxy [`AgentProc::start_haproxy`] started exits;
    /// `None` when it still runs after `limit`.
    pub async fn wait_haproxy_exited(&mut self, limit: Duration) -> Option<ExitStatus> {
        self.haproxy.as_mut()?.wait_exited(limit).await
    }

    /// The agent's pid.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ChildGuard::pid)
    }

    /// Waits until the agent exits; `None` when it still runs after `limit`.
    pub async fn wait_exited(&mut self, limit: Duration) -> Option<ExitStatus> {
        self.process.as_mut()?.wait_exited(limit).await
    }

    /// Whether the agent process still runs.
    pub fn agent_running(&mut self) -> bool {
        self.process
            .as_mut()
            .is_some_and(|process| process.exited().is_none())
    }

    /// `kill -9` of the agent alone: its HAProxy lives on.
    pub fn kill9(&mut self) {
        self.process = None;
    }

    pub fn state_dir(&self) -> PathBuf {
        self.state.path().join("state")
    }

    pub fn output(&self) -> String {
        self.process
            .as_ref()
            .map(ChildGuard::output)
            .unwrap_or_default()
    }

    /// Waits until the agent has logged `text`.
    pub async fn expect_logged(&self, text: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.output().contains(text) {
            assert!(
                Instant::now() < deadline,
                "the agent never logged {text:?}\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The sum of the samples of one metric family on its `/metrics`
    /// (started with [`AgentProc::start_observed`]).
    pub async fn metric_sum(&self, family: &str) -> f64 {
        let admin = self.admin.expect("an agent started with an admin listener");
        super::admin::metric_sum(admin, family, || self.output()).await
    }

    /// `hawser agent health`: its exit status and what it printed.
    pub fn health(&self) -> Finished {
        let mut command = hawser_command(["agent", "health"]);
        command.arg("--state-dir").arg(self.state_dir());
        run_to_end(&mut command)
    }

    pub fn expect_alive(&self) {
        let health = self.health();
        assert!(
            health.status.success() && health.stdout.starts_with("ok"),
            "hawser agent health: {}\n{}",
            health.describe(),
            self.output()
        );
    }

    /// `hawser agent state`, parsed.
    pub fn state(&self) -> Value {
        let mut command = hawser_command(["agent", "state"]);
        command.arg("--state-dir").arg(self.state_dir());
        let done = run_to_end(&mut command);
        assert!(
            done.status.success(),
            "hawser agent state: {}",
            done.describe()
        );
        serde_json::from_str(&done.stdout).expect("agent state is JSON")
    }

    /// Waits until the local socket answers.
    pub async fn wait_alive(&self) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.health().status.success() {
            assert!(
                Instant::now() < deadline,
                "the agent never answered on its local socket\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A file of the version HAProxy serves.
    pub fn served_file(&self, path: &str) -> Vec<u8> {
        fs::read(self.state_dir().join("tree/current").join(path)).expect("served file")
    }

    pub async fn get(&self, host: &str, target: &str) -> Response {
        http::http1_get(self.http, host, target)
            .await
            .unwrap_or_else(|e| panic!("GET http://{host}{target}: {e}\n{}", self.output()))
    }

    /// Waits until `target` on `host` answers `status` through this agent's HAProxy.
    pub async fn expect_status_eventually(&self, host: &str, target: &str, status: u16) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(response) = http::http1_get(self.http, host, target).await
                && response.status == status
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "GET {target} with Host {host:?} never answered {status}\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        self.process = None;
        self.haproxy = None;
        super::run::kill_haproxy_of(&self.state_dir());
    }
}

/// `hawser controller` over a manifests directory, pushing to agents.
#[derive(Debug)]
pub struct ControllerProc {
    pub admin: SocketAddr,
    manifests: PathBuf,
    state: tempfile::TempDir,
    process: ChildGuard,
}

impl ControllerProc {
    pub fn start(manifests: &Path, agents: &[&AgentProc], tls_dir: &Path, args: &[&str]) -> Self {
        let addresses: Vec<SocketAddr> = agents.iter().map(|a| a.listen).collect();
        ControllerProc::start_at(manifests, &addresses, tls_dir, args)
    }

    /// A controller pushing to agents at `addresses` (a proxy's, say).
    pub fn start_at(
        manifests: &Path,
        addresses: &[SocketAddr],
        tls_dir: &Path,
        args: &[&str],
    ) -> Self {
        let mut source: Vec<String> = vec!["--manifests".into(), manifests.display().to_string()];
        for address in addresses {
            source.extend(["--agent".into(), address.to_string()]);
        }
        ControllerProc::launch(manifests, tls_dir, &source, args, &[], None)
    }

    /// [`ControllerProc::start`], with more environment (a fake clock's, say).
    pub fn start_with_env(
        manifests: &Path,
        agents: &[&AgentProc],
        tls_dir: &Path,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Self {
        let mut source: Vec<String> = vec!["--manifests".into(), manifests.display().to_string()];
        for agent in agents {
            source.extend(["--agent".into(), agent.listen.to_string()]);
        }
        ControllerProc::launch(manifests, tls_dir, &source, &[], env, None)
    }

    /// `hawser controller --kubernetes` against the API server a kubeconfig
    /// names (the fake one, served over HTTP).
    pub fn cluster(kubeconfig: &Path, tls_dir: &Path, args: &[&str]) -> Self {
        ControllerProc::cluster_with_binary(kubeconfig, tls_dir, args, None)
    }

    /// [`ControllerProc::cluster`] of another hawser binary (`None`: this
    /// build's).
    pub fn cluster_with_binary(
        kubeconfig: &Path,
        tls_dir: &Path,
        args: &[&str],
        binary: Option<&Path>,
    ) -> Self {
        let env = [("KUBECONFIG", kubeconfig.as_os_str())];
        let source = ["--kubernetes".to_string()];
        ControllerProc::launch(Path::new(""), tls_dir, &source, args, &env, binary)
    }

    fn launch(
        manifests: &Path,
        tls_dir: &Path,
        source: &[String],
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
        binary: Option<&Path>,
    ) -> Self {
        let ip = listen_address();
        let admin = SocketAddr::from((ip, two_free_ports(ip).0));
        let state = tempfile::Builder::new()
            .prefix("hawser-e2e-controller-")
            .tempdir()
            .expect("controller state");
        let mut command = hawser_command_of(binary, ["controller"]);
        command
            .args(source)
            .arg("--tls-dir")
            .arg(tls_dir)
            .arg("--state-dir")
            .arg(state.path())
            .arg("--admin")
            .arg(admin.to_string())
            .args(args)
            .env("HAWSER_LOG", "info")
            // Never the cluster this machine may be in: only the kubeconfig given.
            .env_remove("KUBERNETES_SERVICE_HOST")
            .envs(env.iter().copied());
        ControllerProc {
            admin,
            manifests: manifests.to_path_buf(),
            state,
            process: ChildGuard::spawn("hawser controller", &mut command),
        }
    }

    pub fn output(&self) -> String {
        self.process.output()
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    pub async fn status(&self) -> Value {
        super::admin::status(self.admin, || self.output()).await
    }

    /// The value of one sample of `/metrics` (its name with labels, as printed).
    pub async fn metric(&self, sample: &str) -> Option<f64> {
        super::admin::metric(self.admin, sample, || self.output()).await
    }

    /// Waits until `/status` satisfies `check`; returns it.
    pub async fn wait_for_status(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        super::admin::wait_for_status(self.admin, what, || self.output(), check).await
    }

    /// Waits until every agent holds and serves the newest render; returns
    /// the status.
    pub async fn wait_converged(&self) -> Value {
        self.wait_for_status("every agent converged on the newest render", |s| {
            let generation = &s["controller"]["generation"];
            !generation.is_null()
                && s["fleet"]["agents"].as_object().is_some_and(|agents| {
                    agents.values().all(|a| {
                        a["converged"] == true
                            && a["target_generation"].as_u64() >= generation.as_u64()
                    })
                })
        })
        .await
    }

    /// One agent's entry in `/status`.
    pub fn agent<'a>(status: &'a Value, agent: &AgentProc) -> &'a Value {
        &status["fleet"]["agents"][agent.listen.to_string()]
    }

    /// Writes a manifest file (the controller watches the directory).
    pub fn write_manifest(&self, name: &str, content: &str) {
        let path = self.manifests.join(name);
        let tmp = self.manifests.join(format!(".{name}.tmp"));
        fs::write(&tmp, content).expect("write manifest");
        fs::rename(&tmp, &path).expect("rename manifest");
    }

    pub fn read_manifest(&self, name: &str) -> String {
        fs::read_to_string(self.manifests.join(name)).expect("read manifest")
    }

    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }
}
