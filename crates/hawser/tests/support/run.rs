//! `hawser run` as a process: the controller, the in-process agent and the
//! HAProxy it supervises, on a state directory of the test's own.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hawser_echo::EchoReply;
use hawser_haproxy::{MasterCli, RuntimeApi};
use serde_json::Value;

use super::TIMEOUT;
use super::haproxy::{listen_address, two_free_ports};
use super::http::{self, Response};
use super::process::{ChildGuard, hawser_command_of};

/// `hawser run` over a manifests directory; on drop, hawser and the HAProxy
/// it started are killed.
#[derive(Debug)]
pub struct Run {
    pub http: SocketAddr,
    pub https: SocketAddr,
    pub admin: SocketAddr,
    pub health: SocketAddr,
    manifests: PathBuf,
    config: PathBuf,
    state: tempfile::TempDir,
    /// `--state-dir` when the test chose it (e.g. a small file system).
    state_dir: Option<PathBuf>,
    process: Option<ChildGuard>,
    extra_args: Vec<String>,
    /// Environment variables set for every start (see [`Run::set_env`]).
    env: Vec<(String, String)>,
    binary: Option<PathBuf>,
    haproxy: Option<PathBuf>,
    launcher: Vec<String>,
}

/// Options for [`Run::start_with`].
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Extra YAML appended under `templates:` `snippets:` etc. is not merged:
    /// this is the whole config file's text after the generated `settings`.
    pub config_tail: String,
    /// Extra `hawser run` arguments (e.g. `--drift-interval-secs 1`).
    pub args: Vec<String>,
    /// The `--state-dir` to use instead of one in the run's temporary
    /// directory (which still holds the config file).
    pub state_dir: Option<PathBuf>,
    /// Another hawser binary than this build's.
    pub binary: Option<PathBuf>,
    /// Another HAProxy than `HAWSER_HAPROXY` (e.g. a symlink the test
    /// switches to another binary).
    pub haproxy: Option<PathBuf>,
    /// Environment variables for `hawser run` (e.g. `HAWSER_FAILPOINTS`).
    pub env: Vec<(String, String)>,
    /// A program and its arguments that start `hawser run` (e.g. `setpriv`
    /// with capabilities dropped); empty: hawser is started directly.
    pub launcher: Vec<String>,
}

impl Run {
    /// Starts `hawser run` on `manifests` and waits until it is ready.
    pub async fn start(manifests: &Path) -> Run {
        Run::start_with(manifests, RunOptions::default()).await
    }

    pub async fn start_with(manifests: &Path, options: RunOptions) -> Run {
        let run = Run::launch_with(manifests, options);
        run.expect_ready().await;
        run
    }

    /// Starts `hawser run` without waiting for it to be ready: for a run
    /// that is expected to stay on the bootstrap configuration.
    pub fn launch_with(manifests: &Path, options: RunOptions) -> Run {
        let ip = listen_address();
        let (http_port, https_port) = two_free_ports(ip);
        let (admin_port, health_port) = two_free_ports(ip);
        let state = tempfile::Builder::new()
            .prefix("hawser-e2e-run-")
            .tempdir()
            .expect("state directory");
        let config = state.path().join("hawser.yaml");
        let mut run = Run {
            http: SocketAddr::from((ip, http_port)),
            https: SocketAddr::from((ip, https_port)),
            admin: SocketAddr::from((ip, admin_port)),
            health: SocketAddr::from((ip, health_port)),
            manifests: manifests.to_path_buf(),
            config,
            state,
            state_dir: options.state_dir,
            process: None,
            extra_args: options.args,
            env: options.env,
            binary: options.binary,
            haproxy: options.haproxy,
            launcher: options.launcher,
        };
        run.write_config(&options.config_tail);
        run.spawn();
        run
    }

    /// Rewrites the config file: the generated `settings` (the same
    /// addresses and ports), then `config_tail`. hawser reads it at start, so
    /// it takes effect at the next [`Run::spawn`].
    pub fn write_config(&self, config_tail: &str) {
        let settings = format!(
            "settings:\n  bindAddress: {}\n  httpPort: {}\n  httpsPort: {}\n",
            self.http.ip(),
            self.http.port(),
            self.https.port()
        );
        fs::write(&self.config, settings + config_tail).expect("write config");
    }

    /// An address on this test's loopback address with a port no other
    /// listener of the test was handed: for listeners a config snippet adds.
    pub fn spare_address() -> SocketAddr {
        let ip = listen_address();
        SocketAddr::from((ip, two_free_ports(ip).0))
    }

    /// Starts `hawser run` (again) on the same state directory.
    pub fn spawn(&mut self) {
        let mut command: Command = hawser_command_of(self.binary.as_deref(), ["run"]);
        command
            .arg("--manifests")
            .arg(&self.manifests)
            .arg("--config")
            .arg(&self.config)
            .arg("--state-dir")
            .arg(self.state_dir())
            .arg("--admin")
            .arg(self.admin.to_string())
            .arg("--health-port")
            .arg(self.health.port().to_string())
            .args(&self.extra_args);
        // Reloads paced at 100 ms unless the test paces them itself.
        if !self
            .extra_args
            .iter()
            .any(|a| a == "--min-reload-interval-ms")
        {
            command.args(["--min-reload-interval-ms", "100"]);
        }
        if let Some(haproxy) = &self.haproxy {
            command.env("HAWSER_HAPROXY", haproxy);
        }
        command.env("HAWSER_LOG", "info");
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        if !self.launcher.is_empty() {
            command = launched_by(&self.launcher, &command);
        }
        self.process = Some(ChildGuard::spawn("hawser run", &mut command));
    }

    /// Replaces the environment variables of the next starts
    /// ([`RunOptions::env`]): e.g. to arm a crash point for one start only.
    pub fn set_env(&mut self, env: &[(&str, &str)]) {
        self.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }

    /// Waits until `hawser run` has died of SIGKILL at the crash point
    /// `point` (its last words name it); fails if it exits otherwise or
    /// lives on for [`TIMEOUT`].
    pub async fn expect_killed_at(&mut self, point: &str) {
        use std::os::unix::process::ExitStatusExt as _;
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            let process = self.process.as_mut().expect("hawser run was started");
            if let Some(status) = process.exited() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "hawser run never reached the crash point {point}\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let last_words = format!("failpoint {point} reached");
        // The output reader may be a moment behind the exit.
        while !self.output().contains(&last_words) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            status.signal() == Some(9) && self.output().contains(&last_words),
            "hawser run should have died of SIGKILL at {point}, it ended with {status}\n{}",
            self.output()
        );
    }

    /// Makes a change that needs a reload (Ingress `churn` of `namespace`
    /// to a Service of a new name, `churn-<round>`: a new backend when no
    /// spare is lent) and waits until it is applied by one.
    pub async fn reload_by_new_service(&self, namespace: &str, round: usize) {
        let churn = format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{ name: churn-{round}, namespace: {namespace} }}\n\
             spec:\n  ports: [{{ name: http, port: 80 }}]\n---\n\
             apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: churn, namespace: {namespace} }}\n\
             spec:\n  rules:\n    - host: churn.example.com\n      http:\n        paths:\n\
             \x20         - path: /\n            pathType: Prefix\n\
             \x20           backend: {{ service: {{ name: churn-{round}, port: {{ name: http }} }} }}\n"
        );
        let before = self.desired_generation().await;
        self.write_manifest("churn.yaml", &churn);
        self.expect_outcome_after(before, "reload").await;
    }

    /// The pid of `hawser run`, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ChildGuard::pid)
    }

    /// `kill -9` of hawser alone: HAProxy, in its own process group, lives on.
    pub fn kill9(&mut self) {
        // Dropping the guard kills (SIGKILL) and reaps the process.
        self.process = None;
    }

    /// SIGTERM, then waits for the process to exit.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let process = self.process.as_mut()?;
        let pid = process.pid();
        let _ = Command::new("kill")
            .args(["-TERM", "--", &pid.to_string()])
            .status();
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = process.exited() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Waits, without blocking the runtime, until hawser exits; `None` when
    /// it is still running after `limit`.
    pub async fn wait_exited(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        self.process.as_mut()?.wait_exited(limit).await
    }

    pub fn state_dir(&self) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(|| self.state.path().join("state"))
    }

    pub fn manifests(&self) -> &Path {
        &self.manifests
    }

    /// What hawser printed so far.
    pub fn output(&self) -> String {
        self.process
            .as_ref()
            .map(ChildGuard::output)
            .unwrap_or_default()
    }

    pub fn master(&self) -> MasterCli {
        MasterCli::new(self.state_dir().join("run/master.sock"))
    }

    pub fn runtime(&self) -> RuntimeApi {
        RuntimeApi::new(self.state_dir().join("run/admin.sock"))
    }

    /// The pids of HAProxy's current workers.
    pub async fn worker_pids(&self) -> Vec<u32> {
        let table = self.master().show_proc().await.expect("show proc");
        table.workers.iter().map(|w| w.pid).collect()
    }

    /// The `/status` document.
    pub async fn status(&self) -> Value {
        super::admin::status(self.admin, || self.output()).await
    }

    /// Waits until `/status` satisfies `check`; returns it.
    pub async fn wait_for_status(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        super::admin::wait_for_status(self.admin, what, || self.output(), check).await
    }

    /// Waits until HAProxy serves the newest rendered generation.
    pub async fn wait_converged(&self) -> Value {
        self.wait_for_status("the desired generation applied", |s| {
            s["ready"] == true
                && !s["desired_generation"].is_null()
                && s["desired_generation"] == s["applied_generation"]
        })
        .await
    }

    /// Waits for `/readyz` to answer 200.
    pub async fn expect_ready(&self) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(r) = http::http1_get(self.admin, "hawser", "/readyz").await
                && r.status == 200
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "hawser run did not become ready within {TIMEOUT:?}\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Writes a manifest file (the source watches the directory).
    pub fn write_manifest(&self, name: &str, content: &str) {
        let path = self.manifests.join(name);
        let tmp = self.manifests.join(format!(".{name}.tmp"));
        fs::write(&tmp, content).expect("write manifest");
        fs::rename(&tmp, &path).expect("rename manifest");
    }

    pub async fn get(&self, host: &str, target: &str) -> Response {
        http::http1_get(self.http, host, target)
            .await
            .unwrap_or_else(|e| panic!("GET http://{host}{target}: {e}\n{}", self.output()))
    }

    /// `request` over plain HTTP/1.1.
    pub async fn request(&self, request: &http::Request) -> Response {
        http::http1_request(self.http, request)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "{} http://{}{}: {e}\n{}",
                    request.method,
                    request.host,
                    request.target,
                    self.output()
                )
            })
    }

    pub async fn expect_routed_to(&self, host: &str, target: &str, service: &str) -> EchoReply {
        let response = self.get(host, target).await;
        assert_eq!(response.status, 200, "GET {target}: {:?}", response.text());
        let reply = response.echo();
        assert_eq!(
            reply.service, service,
            "GET {target} reached {} ({})",
            reply.service, reply.pod
        );
        reply
    }

    /// Waits until requests to `host` reach `service` (e.g. after an edit).
    pub async fn expect_route_eventually(
        &self,
        host: &str,
        target: &str,
        service: &str,
    ) -> EchoReply {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(response) = http::http1_get(self.http, host, target).await
                && response.status == 200
            {
                let reply = response.echo();
                if reply.service == service {
                    return reply;
                }
            }
            assert!(
                Instant::now() < deadline,
                "GET {target} with Host {host:?} never reached {service}\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// `<state>/tree/current`: the version HAProxy loads on its next reload.
    pub fn current_tree(&self) -> PathBuf {
        self.state_dir().join("tree/current")
    }

    /// The maps of the applied version (`<state>/tree/current/maps/`), named
    /// as HAProxy knows them (`maps/<file>`), each with its entries in file
    /// order; sorted by name.
    pub fn applied_maps(&self) -> Vec<(String, Vec<(String, String)>)> {
        let dir = self.current_tree().join("maps");
        let mut maps: Vec<(String, Vec<(String, String)>)> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| {
                let entry = entry.expect("map file");
                let name = format!("maps/{}", entry.file_name().to_string_lossy());
                let entries = fs::read_to_string(entry.path())
                    .unwrap_or_else(|e| panic!("{name}: {e}"))
                    .lines()
                    .filter_map(|line| line.split_once(' '))
                    .map(|(k, v)| (k.to_string(), v.trim().to_string()))
                    .collect();
                (name, entries)
            })
            .collect();
        maps.sort();
        maps
    }

    /// Waits until every map of the applied version is live in HAProxy
    /// exactly: the same entries, none more (in any order). The map naming
    /// which copy of a twinned map requests read may name either copy.
    pub async fn expect_live_maps_applied(&self) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let applied = self.applied_maps();
            let mut differs = None;
            for (map, entries) in &applied {
                let mut live = self.runtime().show_map(map).await.expect("show map");
                if map == "maps/live_twins.map" {
                    let twin = |map: &str| map.replace(".map", ".twin.map");
                    let names_a_copy =
                        |(map, copy): &(String, String)| *copy == twin(map) || copy == map;
                    if live.len() != entries.len() || !live.iter().all(names_a_copy) {
                        differs = Some(format!("{map} names no copy: {live:?}"));
                        break;
                    }
                    continue;
                }
                // Compared as sets: an entry added at runtime (`add map`)
                // is listed last, where the file may have it anywhere.
                let mut entries = entries.clone();
                live.sort();
                entries.sort();
                if live != entries {
                    differs = Some(format!("{map}: live {live:?}, applied {entries:?}"));
                    break;
                }
            }
            let Some(difference) = differs else {
                return;
            };
            assert!(
                Instant::now() < deadline,
                "the live maps never matched the applied version: {difference}\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The generation the controller handed over last (0 before the first).
    pub async fn desired_generation(&self) -> u64 {
        self.status().await["desired_generation"]
            .as_u64()
            .unwrap_or(0)
    }

    /// Waits for the agent's outcome of the first generation newer than
    /// `after` (take `after` from [`Run::desired_generation`] before the
    /// change), asserts it was applied as `kind` (`no-op`, `runtime`,
    /// `reload` or `rejected`) and returns `/status`.
    pub async fn expect_outcome_after(&self, after: u64, kind: &str) -> Value {
        let status = self
            .wait_for_status(&format!("an outcome for a generation after {after}"), |s| {
                let outcome = s["agent"]["last_outcome"]["generation"]
                    .as_u64()
                    .unwrap_or(0);
                outcome > after && s["desired_generation"].as_u64() == Some(outcome)
            })
            .await;
        assert_eq!(
            status["agent"]["last_outcome"]["kind"],
            kind,
            "the generation after {after} should be applied as {kind}: {status:#}\n{}",
            self.output()
        );
        status
    }

    /// Asserts `/readyz` answers 503: no verified configuration serves.
    pub async fn expect_not_ready(&self) {
        let response = http::http1_get(self.admin, "hawser", "/readyz")
            .await
            .unwrap_or_else(|e| panic!("GET /readyz: {e}\n{}", self.output()));
        assert_eq!(
            response.status,
            503,
            "/readyz: {:?}\n{}",
            response.text(),
            self.output()
        );
    }

    /// Asserts HAProxy's health listener answers `status` (200 on a
    /// rendered configuration, 503 on the bootstrap one).
    pub async fn expect_health(&self, status: u16) {
        let response = http::http1_get(self.health, "hawser", "/healthz")
            .await
            .unwrap_or_else(|e| panic!("GET /healthz on {}: {e}\n{}", self.health, self.output()));
        assert_eq!(
            response.status,
            status,
            "health listener: {:?}\n{}",
            response.text(),
            self.output()
        );
    }

    /// Waits until `/metrics` has the series `series` (name and labels, as
    /// printed) at `value`.
    pub async fn expect_metric(&self, series: &str, value: f64) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let text = self.metrics_text().await;
            let found = series_value(&text, series);
            if found == Some(value) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "/metrics never showed {series} {value} (last {found:?}):\n{text}\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The value of `series` (name and labels, as printed) in `/metrics`
    /// now, if it is there.
    pub async fn metric(&self, series: &str) -> Option<f64> {
        series_value(&self.metrics_text().await, series)
    }

    async fn metrics_text(&self) -> String {
        http::http1_get(self.admin, "hawser", "/metrics")
            .await
            .map(|r| r.text())
            .unwrap_or_default()
    }

    /// `GET http://<host><target>` on `addr`, e.g. a listener a snippet adds.
    pub async fn get_on(&self, addr: SocketAddr, host: &str, target: &str) -> Response {
        http::http1_get(addr, host, target)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "GET http://{host}{target} on {addr}: {e}\n{}",
                    self.output()
                )
            })
    }

    /// `GET https://<host><target>` on `addr` over HTTP/1.1, SNI `sni`.
    pub async fn get_tls_on(
        &self,
        addr: SocketAddr,
        sni: Option<&str>,
        host: &str,
        target: &str,
    ) -> Response {
        http::https1_get(addr, sni, host, target)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "GET https://{host}{target} on {addr} (SNI {sni:?}): {e}\n{}",
                    self.output()
                )
            })
    }

    /// `GET https://<host><target>` on the HTTPS port, SNI `sni`.
    pub async fn get_tls(&self, sni: Option<&str>, host: &str, target: &str) -> Response {
        self.get_tls_on(self.https, sni, host, target).await
    }

    /// Sends requests to `host` until every pod in `pods` has answered;
    /// returns the pods that answered. Other pods may answer meanwhile.
    pub async fn expect_pods_reached(
        &self,
        host: &str,
        target: &str,
        pods: &[&str],
    ) -> Vec<String> {
        let deadline = Instant::now() + TIMEOUT;
        let mut seen = std::collections::BTreeSet::new();
        loop {
            if let Ok(response) = http::http1_get(self.http, host, target).await
                && response.status == 200
            {
                seen.insert(response.echo().pod);
            }
            if pods.iter().all(|p| seen.contains(*p)) {
                return seen.into_iter().collect();
            }
            assert!(
                Instant::now() < deadline,
                "GET {target} with Host {host:?} never reached all of {pods:?} (seen {seen:?})\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The worker the runtime API answers from: the one serving. (After a
    /// failed reload HAProxy 3.1 and later list it under `# old workers`,
    /// 3.0 under `# workers`.)
    /// Asked again while a reload hands the socket over.
    pub async fn serving_worker(&self) -> u32 {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match self.runtime().show_info().await {
                Ok(info) => {
                    return info
                        .get("Pid")
                        .and_then(|pid| pid.parse().ok())
                        .unwrap_or_else(|| panic!("show info without a Pid: {info:?}"));
                }
                Err(e) => assert!(Instant::now() < deadline, "show info: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The pid in HAProxy's pid file, if any.
    pub fn haproxy_master_pid(&self) -> Option<u32> {
        fs::read_to_string(self.state_dir().join("run/haproxy.pid"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.process = None;
        kill_haproxy_of(&self.state_dir());
    }
}

/// Kills the HAProxy a hawser process started on `state_dir` (its pid file).
/// HAProxy runs in its own process group, which outlives a killed hawser. A
/// pid file may be stale and its pid reused: signal only an HAProxy, and its
/// group only when it leads one.
pub(crate) fn kill_haproxy_of(state_dir: &Path) {
    let Some(pid) = fs::read_to_string(state_dir.join("run/haproxy.pid"))
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
    else {
        return;
    };
    let Some((comm, pgrp)) = process_name_and_group(pid) else {
        return;
    };
    if comm != "haproxy" {
        return;
    }
    if pgrp == pid {
        // `--` first: procps-ng 4.0.2's kill parses `kill -KILL -<pgid>`
        // as `kill(-1, SIGKILL)`, which kills every process there is.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .status();
    }
    let _ = Command::new("kill")
        .args(["-KILL", "--", &pid.to_string()])
        .status();
}

/// The command name and process group of `pid`, from `/proc/<pid>/stat`;
/// `None` for pids 0 and 1 (never ours to signal) and for gone processes.
fn process_name_and_group(pid: u32) -> Option<(String, u32)> {
    if pid <= 1 {
        return None;
    }
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `<pid> (<comm>) <state> <ppid> <pgrp> ...`; comm may hold spaces and `)`.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let pgrp = stat
        .get(close + 1..)?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()?;
    Some((comm, pgrp))
}

/// The value of `series` in a Prometheus text exposition.
fn series_value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        line.strip_prefix(series)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<f64>().ok())
    })
}

/// `command` started by `launcher` (a program and its first arguments),
/// with the same environment.
fn launched_by(launcher: &[String], command: &Command) -> Command {
    let mut launched = Command::new(&launcher[0]);
    launched
        .args(&launcher[1..])
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => launched.env(name, value),
            None => launched.env_remove(name),
        };
    }
    launched
}
