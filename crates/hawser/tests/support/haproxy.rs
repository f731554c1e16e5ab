//! HAProxy serving a rendered tree, and the assertions tests make through it.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hawser_echo::EchoReply;
use tokio::net::TcpStream;

use super::TIMEOUT;
use super::fixture::{Manifests, render};
use super::http::{self, Response};
use super::process::{ChildGuard, Finished, haproxy_binary};

/// How many times HAProxy is started on fresh ports when one was taken
/// between choosing it and binding it.
const BIND_ATTEMPTS: usize = 5;

/// What hawser's not-found backend answers (libraries/backends).
pub const NO_ROUTE_BODY: &str = "no route for this host and path";

/// HAProxy running `-db` on a tree `hawser render` wrote; killed on drop.
#[derive(Debug)]
pub struct Haproxy {
    pub http: SocketAddr,
    pub https: SocketAddr,
    /// The render that made the tree HAProxy serves.
    pub render: Finished,
    process: ChildGuard,
    work: tempfile::TempDir,
}

impl Haproxy {
    /// Renders `manifests` with HAProxy on two free ports, starts
    /// HAProxy on the result and waits until both ports accept connections.
    /// The render must succeed (rejected objects are fine).
    pub async fn start(manifests: &Manifests) -> Haproxy {
        let binary = haproxy_binary();
        let work = tempfile::Builder::new()
            .prefix("hawser-e2e-haproxy-")
            .tempdir()
            .expect("temporary directory");
        let config = work.path().join("hawser.yaml");
        let out = work.path().join("out");
        let mut failures = String::new();
        for _ in 0..BIND_ATTEMPTS {
            let ip = listen_address();
            let (http_port, https_port) = two_free_ports(ip);
            let (http, https) = (
                SocketAddr::from((ip, http_port)),
                SocketAddr::from((ip, https_port)),
            );
            fs::write(&config, config_yaml(ip, http_port, https_port)).expect("write config");
            let render = render(manifests.path(), &out, Some(&config));
            assert!(
                render.status.success(),
                "hawser render failed\n{}",
                render.describe()
            );
            let mut command = Command::new(&binary);
            command
                .arg("-C")
                .arg(&out)
                .args(["-f", "haproxy.cfg", "-db"]);
            let mut process = ChildGuard::spawn("haproxy", &mut command);
            match wait_listening(&mut process, &[http, https]).await {
                Ok(()) => {
                    return Haproxy {
                        http,
                        https,
                        render,
                        process,
                        work,
                    };
                }
                Err(output) if output.contains("cannot bind") => {
                    let _ = writeln!(failures, "{output}");
                }
                Err(output) => panic!(
                    "HAProxy did not start on the rendered tree:\n{output}\n{}",
                    render.describe()
                ),
            }
        }
        panic!("HAProxy found no free ports in {BIND_ATTEMPTS} attempts:\n{failures}");
    }

    /// The rendered tree HAProxy serves.
    pub fn out_dir(&self) -> PathBuf {
        self.work.path().join("out")
    }

    /// The rendered `haproxy.cfg`.
    pub fn config(&self) -> String {
        read_text(&self.out_dir().join("haproxy.cfg"))
    }

    /// What HAProxy printed so far (its log goes to stdout).
    pub fn output(&self) -> String {
        self.process.output()
    }

    /// `GET http://<host><target>`.
    pub async fn get(&self, host: &str, target: &str) -> Response {
        http::http1_get(self.http, host, target)
            .await
            .unwrap_or_else(|e| panic!("GET http://{host}{target}: {e}"))
    }

    /// `request` over plain HTTP/1.1.
    pub async fn request(&self, request: &http::Request) -> Response {
        http::http1_request(self.http, request)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "{} http://{}{}: {e}",
                    request.method, request.host, request.target
                )
            })
    }

    /// `GET https://<host><target>` over HTTP/1.1 with SNI `sni` (none for `None`).
    pub async fn get_tls(&self, sni: Option<&str>, host: &str, target: &str) -> Response {
        http::https1_get(self.https, sni, host, target)
            .await
            .unwrap_or_else(|e| panic!("GET https://{host}{target} (SNI {sni:?}): {e}"))
    }

    /// `GET https://<host><target>` with SNI `host`, showing the client
    /// certificate `(cert_pem, key_pem)`; `Err` when the handshake fails.
    pub async fn get_tls_as(
        &self,
        host: &str,
        target: &str,
        client: (&str, &str),
    ) -> Result<Response, String> {
        http::https1_get_as(self.https, host, host, target, client).await
    }

    /// `GET https://<authority><path>` over HTTP/2 (ALPN h2), SNI `authority`.
    pub async fn get_h2(&self, authority: &str, path: &str) -> Response {
        http::h2_get(self.https, authority, authority, path)
            .await
            .unwrap_or_else(|e| panic!("h2 GET https://{authority}{path}: {e}"))
    }

    /// Asserts the request reaches an echo backend; returns its answer.
    pub async fn expect_route(&self, host: &str, target: &str) -> EchoReply {
        let response = self.get(host, target).await;
        assert_eq!(
            response.status,
            200,
            "GET {target} with Host {host:?} should reach a backend; got {} {:?}",
            response.status,
            response.text()
        );
        response.echo()
    }

    /// Asserts the request reaches Service `service`; returns its answer.
    pub async fn expect_routed_to(&self, host: &str, target: &str, service: &str) -> EchoReply {
        let reply = self.expect_route(host, target).await;
        assert_eq!(
            reply.service, service,
            "GET {target} with Host {host:?} reached Service {} (pod {}), expected {service}",
            reply.service, reply.pod
        );
        reply
    }

    /// Asserts the answer's status; returns the response.
    pub async fn expect_status(&self, host: &str, target: &str, status: u16) -> Response {
        let response = self.get(host, target).await;
        assert_eq!(
            response.status,
            status,
            "GET {target} with Host {host:?}: body {:?}",
            response.text()
        );
        response
    }

    /// Asserts hawser's own 404: no route matches and there is no default backend.
    pub async fn expect_no_route(&self, host: &str, target: &str) {
        let response = self.expect_status(host, target, 404).await;
        assert_eq!(
            response.text(),
            NO_ROUTE_BODY,
            "GET {target} with Host {host:?} should get hawser's not-found answer"
        );
    }
}

/// The config file the harness renders with: HAProxy on one loopback address
/// and two ports, and with `noreuseport`, so that should two HAProxies ever
/// pick the same address and port, the second fails to bind (and the harness
/// retries) instead of sharing the port silently.
fn config_yaml(ip: Ipv4Addr, http: u16, https: u16) -> String {
    format!(
        "settings:\n  bindAddress: {ip}\n  httpPort: {http}\n  httpsPort: {https}\n\
         templates:\n  snippets:\n    global-e2e-ports: \"  noreuseport\\n\"\n"
    )
}

/// The address this test process's HAProxy listens on: 127.64.0.0/10 plus
/// the process id, so two test processes (nextest runs each test in its own)
/// never share an address, whatever ports they pick.
pub(crate) fn listen_address() -> Ipv4Addr {
    let [_, high, mid, low] = std::process::id().to_be_bytes();
    Ipv4Addr::new(127, 64 | (high & 63), mid, low)
}

/// Ports this process handed out already: tests in one process (`cargo
/// test` runs them on threads) share the address, so never twice the same.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// Two ports free on `ip` that this process has not handed out before.
pub(crate) fn two_free_ports(ip: Ipv4Addr) -> (u16, u16) {
    let mut handed_out = HANDED_OUT.lock().expect("port registry");
    let mut ports = Vec::new();
    // Hold every probe open until done, so the kernel offers fresh ports.
    let mut probes = Vec::new();
    while ports.len() < 2 {
        let probe = TcpListener::bind((ip, 0)).expect("a free port");
        let port = probe.local_addr().expect("probe address").port();
        if handed_out.insert(port) {
            ports.push(port);
        }
        probes.push(probe);
    }
    (ports[0], ports[1])
}

/// Waits until every address accepts connections; `Err` with HAProxy's
/// output when it exits first.
async fn wait_listening(process: &mut ChildGuard, addrs: &[SocketAddr]) -> Result<(), String> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = process.exited() {
            // Give the output readers a moment to collect the last lines.
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Err(format!("HAProxy exited ({status}):\n{}", process.output()));
        }
        let mut all = true;
        for addr in addrs {
            all &= TcpStream::connect(addr).await.is_ok();
        }
        if all {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "HAProxy did not listen on {addrs:?} within {TIMEOUT:?}:\n{}",
                process.output()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn read_text(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}
