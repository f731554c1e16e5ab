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
use super::process::{ChildGuard, hawser_command};

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
    process: Option<ChildGuard>,
    extra_args: Vec<String>,
}

/// Options for [`Run::start_with`].
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Extra YAML appended under `templates:` `snippets:` etc. is not merged:
    /// this is the whole config file's text after the generated `settings`.
    pub config_tail: String,
    /// Extra `hawser run` arguments (e.g. `--drift-interval-secs 1`).
    pub args: Vec<String>,
}

impl Run {
    /// Starts `hawser run` on `manifests` and waits until it is ready.
    pub async fn start(manifests: &Path) -> Run {
        Run::start_with(manifests, RunOptions::default()).await
    }

    pub async fn start_with(manifests: &Path, options: RunOptions) -> Run {
        let ip = listen_address();
        let (http_port, https_port) = two_free_ports(ip);
        let (admin_port, health_port) = two_free_ports(ip);
        let state = tempfile::Builder::new()
            .prefix("hawser-e2e-run-")
            .tempdir()
            .expect("state directory");
        let config = state.path().join("hawser.yaml");
        fs::write(
            &config,
            format!(
                "settings:\n  bindAddress: {ip}\n  httpPort: {http_port}\n  httpsPort: {https_port}\n{}",
                options.config_tail
            ),
        )
        .expect("write config");
        let mut run = Run {
            http: SocketAddr::from((ip, http_port)),
            https: SocketAddr::from((ip, https_port)),
            admin: SocketAddr::from((ip, admin_port)),
            health: SocketAddr::from((ip, health_port)),
            manifests: manifests.to_path_buf(),
            config,
            state,
            process: None,
            extra_args: options.args,
        };
        run.spawn();
        run.expect_ready().await;
        run
    }

    /// Starts `hawser run` (again) on the same state directory.
    pub fn spawn(&mut self) {
        let mut command: Command = hawser_command(["run"]);
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
            .args(["--min-reload-interval-ms", "100"])
            .args(&self.extra_args)
            .env("HAWSER_LOG", "info");
        self.process = Some(ChildGuard::spawn("hawser run", &mut command));
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
            .arg("-TERM")
            .arg(pid.to_string())
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

    pub fn state_dir(&self) -> PathBuf {
        self.state.path().join("state")
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
        let response = http::http1_get(self.admin, "hawser", "/status")
            .await
            .unwrap_or_else(|e| panic!("GET /status: {e}\n{}", self.output()));
        serde_json::from_slice(&response.body).expect("/status is JSON")
    }

    /// Waits until `/status` satisfies `check`; returns it.
    pub async fn wait_for_status(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(response) = http::http1_get(self.admin, "hawser", "/status").await
                && let Ok(status) = serde_json::from_slice::<Value>(&response.body)
            {
                if check(&status) {
                    return status;
                }
                if Instant::now() > deadline {
                    panic!("/status never showed {what}: {status:#}\n{}", self.output());
                }
            } else if Instant::now() > deadline {
                panic!(
                    "/status never answered while waiting for {what}\n{}",
                    self.output()
                );
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
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
        // HAProxy runs in its own process group, which outlives a killed hawser.
        if let Some(pid) = self.haproxy_master_pid() {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(format!("-{pid}"))
                .status();
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
        }
    }
}

/// An unused IPv4 loopback address for this test process.
pub fn loopback() -> Ipv4Addr {
    listen_address()
}
