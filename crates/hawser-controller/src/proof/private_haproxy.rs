//! An HAProxy of the test run's own: the render with private settings,
//! written to a temporary directory and served in the foreground until the
//! run ends (or its handle drops, which kills it).
//!
//! Each run binds an address of its own in 127.128.0.0/9, with
//! `SO_REUSEPORT` off (`-dR`): two runs at once (tests in parallel, two
//! controllers) can then never share a listening port and answer each
//! other's requests; a port taken after it was chosen fails the bind, and
//! the run starts again on fresh ones.

use std::collections::BTreeSet;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher as _, Hasher as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::Stdio;
use std::time::{Duration, Instant};

use hawser_haproxy::HaproxyBinary;
use hawser_haproxy::sandbox::Sandbox;
use hawser_model::Store;
use hawser_render::{CONFIG_PATH, Plan, RenderConfig, Renderer};
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use super::ValidationTestError;
use crate::gate;
use crate::tree::write_tree;

/// How long HAProxy may take to accept connections on its HTTP port.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// How often a starting HAProxy is polled.
const START_POLL: Duration = Duration::from_millis(20);
/// How many times HAProxy is started on fresh ports when one was taken
/// between choosing it and binding it.
const BIND_ATTEMPTS: usize = 3;
/// How much of HAProxy's stderr is kept for an error message.
const STDERR_LIMIT: usize = 16 * 1024;

/// A running private HAProxy.
#[derive(Debug)]
pub(super) struct PrivateHaproxy {
    http: SocketAddr,
    child: Child,
    /// Holds the rendered tree until HAProxy is gone.
    _tree: tempfile::TempDir,
}

impl PrivateHaproxy {
    /// Renders `store` with `config` made private and starts HAProxy on it;
    /// returns once its HTTP port accepts connections.
    pub async fn start(
        binary: &HaproxyBinary,
        config: &RenderConfig,
        store: &Store,
    ) -> Result<Self, ValidationTestError> {
        let mut taken = String::new();
        for _ in 0..BIND_ATTEMPTS {
            let ip = private_address();
            let (http, https) = two_free_ports(ip).map_err(ValidationTestError::Prepare)?;
            let private = private_config(config, ip, http, https);
            // Nothing of the user's runs before the config policy passes.
            let policy = gate::config_policy(&private);
            let renderer = Renderer::new(private).map_err(ValidationTestError::Render)?;
            let rendered = renderer
                .render(store)
                .map_err(ValidationTestError::Render)?;
            let tree = tempfile::Builder::new()
                .prefix("hawser-tests-")
                .tempdir()
                .map_err(ValidationTestError::Prepare)?;
            write_tree(&rendered.files, tree.path()).map_err(ValidationTestError::Prepare)?;
            policy
                .check_tree(tree.path(), CONFIG_PATH.as_ref())
                .map_err(|refused| {
                    ValidationTestError::Refused(gate::GateError::Refused(refused))
                })?;
            let addr = SocketAddr::from((ip, http));
            let ports = PrivatePorts::of(store, &rendered.plan, http, https);
            match start_on(binary, tree, addr, &ports).await {
                Ok(server) => return Ok(server),
                Err(ValidationTestError::HaproxyFailed { output })
                    if output.contains("cannot bind") =>
                {
                    taken = output;
                }
                Err(failed @ ValidationTestError::HaproxyFailed { .. }) => {
                    // The gate's verdict names the object or snippet at fault.
                    return Err(match gate::check(binary, &policy, &rendered.files).await {
                        Err(refused) => ValidationTestError::Refused(refused),
                        Ok(_) => failed,
                    });
                }
                Err(other) => return Err(other),
            }
        }
        Err(ValidationTestError::HaproxyFailed { output: taken })
    }

    /// The plain HTTP address the rendered frontend listens on.
    pub fn http(&self) -> SocketAddr {
        self.http
    }

    /// Kills HAProxy and waits for it to be gone.
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// The user's configuration with everything that must differ for a private
/// run replaced: the loopback address `ip` only, the given ports, no runtime
/// socket, no server-state file, no health listener.
pub(super) fn private_config(
    config: &RenderConfig,
    ip: Ipv4Addr,
    http: u16,
    https: u16,
) -> RenderConfig {
    let mut config = config.clone();
    let settings = &mut config.settings;
    settings.bind_address = ip.to_string();
    settings.http_port = http;
    settings.https_port = https;
    settings.runtime_socket = None;
    settings.server_state_file = None;
    settings.health_port = None;
    config
}

/// The TCP ports a private HAProxy may use in its sandbox: it binds its own
/// (HTTP, HTTPS, and the ports Gateway listeners have to themselves) and
/// connects to the servers of the plan (the echoes), nothing else.
#[derive(Debug)]
struct PrivatePorts {
    bind: BTreeSet<u16>,
    connect: BTreeSet<u16>,
}

impl PrivatePorts {
    fn of(store: &Store, plan: &Plan, http: u16, https: u16) -> Self {
        let listeners = store
            .gateways()
            .flat_map(|gateway| &gateway.listeners)
            .filter_map(|listener| u16::try_from(listener.port).ok());
        Self {
            bind: [http, https].into_iter().chain(listeners).collect(),
            connect: plan
                .backends
                .iter()
                .flat_map(|backend| &backend.servers)
                .map(|server| server.port)
                .collect(),
        }
    }
}

/// Starts HAProxy on `tree` in a sandbox: it reads the tree, makes its unix
/// sockets there (HAProxy runs in it), binds and connects only `ports`.
async fn start_on(
    binary: &HaproxyBinary,
    tree: tempfile::TempDir,
    http: SocketAddr,
    ports: &PrivatePorts,
) -> Result<PrivateHaproxy, ValidationTestError> {
    let mut command = Command::new(binary.path());
    command
        .args(["-db", "-dR"])
        .arg("-C")
        .arg(tree.path())
        .args(["-f", CONFIG_PATH])
        .stdin(Stdio::null())
        // The configuration's log target is usually stdout: one line a request.
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = Sandbox::new()
        .read(tree.path())
        .sockets_in(tree.path())
        .bind_tcp(ports.bind.iter().copied())
        .connect_tcp(ports.connect.iter().copied())
        .spawn(command)
        .await
        .map_err(|error| ValidationTestError::Spawn {
            path: binary.path().to_path_buf(),
            source: std::io::Error::other(error),
        })?
        .child;
    let stderr = child.stderr.take().map(|pipe| tokio::spawn(drain(pipe)));
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let output = collect(stderr).await;
                return Err(ValidationTestError::HaproxyFailed {
                    output: format!("{}\n(HAProxy exited: {status})", output.trim_end()),
                });
            }
            Ok(None) => {}
            Err(error) => {
                let _ = child.start_kill();
                return Err(ValidationTestError::Prepare(error));
            }
        }
        if TcpStream::connect(http).await.is_ok() {
            return Ok(PrivateHaproxy {
                http,
                child,
                _tree: tree,
            });
        }
        if Instant::now() > deadline {
            let _ = child.start_kill();
            let _ = child.wait().await;
            let output = collect(stderr).await;
            return Err(ValidationTestError::HaproxyFailed {
                output: format!(
                    "{}\n(no connection on {http} after {START_TIMEOUT:?})",
                    output.trim_end()
                ),
            });
        }
        tokio::time::sleep(START_POLL).await;
    }
}

/// Reads a pipe to its end, keeping the first [`STDERR_LIMIT`] bytes, so
/// HAProxy never blocks on a full pipe.
async fn drain(mut pipe: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buffer = [0_u8; 4096];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let room = STDERR_LIMIT.saturating_sub(kept.len());
        kept.extend_from_slice(&buffer[..n.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

async fn collect(stderr: Option<JoinHandle<String>>) -> String {
    match stderr {
        Some(task) => task.await.unwrap_or_default(),
        None => String::new(),
    }
}

/// Two distinct free ports on `ip` (both held while choosing).
fn two_free_ports(ip: Ipv4Addr) -> std::io::Result<(u16, u16)> {
    let first = TcpListener::bind((ip, 0))?;
    let second = TcpListener::bind((ip, 0))?;
    Ok((first.local_addr()?.port(), second.local_addr()?.port()))
}

/// A random loopback address in 127.128.0.0/9 (the whole of 127.0.0.0/8 is
/// loopback on Linux), away from the 127.0.0.x addresses commonly in use.
pub(super) fn private_address() -> Ipv4Addr {
    let random = RandomState::new().build_hasher().finish().to_be_bytes();
    Ipv4Addr::new(127, 128 | random[0], random[1], random[2].clamp(1, 254))
}
