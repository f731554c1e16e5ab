//! `hawser run` while something outside it interferes with HAProxy
//! (fixture `run_outside_interference/`):
//!
//! - a reload from outside, by SIGUSR2 to the master or `reload` on its
//!   CLI: HAProxy reloads what hawser put on disk, so nothing hawser
//!   applied (at runtime included) is lost, no request fails, and the next
//!   change still applies at runtime;
//! - the stats socket stalls (a listener that accepts and never answers
//!   stands where HAProxy's was), or the master CLI has no connection left
//!   (every one held open by someone else): each command gives up after a
//!   bounded wait, `/status` names the socket and what failed, HAProxy
//!   keeps serving the version before, and once the socket answers again
//!   the version that failed applies by itself, with no further change;
//! - the stats socket refuses hawser access (its mode): no reload is
//!   started, since none could be verified; once allowed, the version
//!   applies by itself.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::{Backends, Load, LoadTarget, Manifests, Run, RunOptions, pod, signal};
use tokio::net::{UnixListener, UnixStream};

const HOST: &str = "web.example.com";

fn fixture() -> (Backends, Manifests) {
    let backends = Backends::start(&[
        pod("outside", "web", "web-a"),
        pod("outside", "web", "web-b"),
        pod("outside", "api", "api-a"),
    ]);
    let manifests = Manifests::from_fixture("run_outside_interference", &backends.vars());
    (backends, manifests)
}

/// The Service's EndpointSlice with `pods`.
fn endpoints(backends: &Backends, pods: &[&str]) -> String {
    let port = backends.pod("web-a").addr.port();
    let mut text = format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
         metadata:\n  name: web-1\n  namespace: outside\n  labels: {{ kubernetes.io/service-name: web }}\n\
         addressType: IPv4\nports: [{{ name: http, port: {port} }}]\nendpoints:\n"
    );
    for pod in pods {
        let ip = backends.pod(pod).addr.ip();
        text.push_str(&format!(
            "  - addresses: [\"{ip}\"]\n    targetRef: {{ kind: Pod, name: {pod} }}\n"
        ));
    }
    text
}

#[tokio::test]
async fn outside_reloads_keep_what_hawser_applied() {
    let (backends, manifests) = fixture();
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;
    let before = run.desired_generation().await;
    run.write_manifest("endpoints.yaml", &endpoints(&backends, &["web-a", "web-b"]));
    run.expect_outcome_after(before, "runtime").await;

    let load = Load::start(
        run.http,
        4,
        vec![LoadTarget::new(HOST, &["web-a", "web-b"])],
    );
    let master = run.master();
    let first = run.worker_pids().await;
    signal(
        "USR2",
        master.show_proc().await.expect("show proc").master.pid,
    );
    let second = new_workers(&run, &first).await;
    reload_from_outside(&master).await;
    new_workers(&run, &second).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let report = load.stop().await;
    assert_eq!(report.failures, 0, "{report:?}");

    // What hawser applied at runtime was on disk: both pods still answer.
    run.expect_pods_reached(HOST, "/", &["web-a", "web-b"])
        .await;
    // And hawser goes on changing the HAProxy it did not reload itself.
    let before = run.desired_generation().await;
    run.write_manifest("endpoints.yaml", &endpoints(&backends, &["web-b"]));
    let status = run.expect_outcome_after(before, "runtime").await;
    assert_eq!(status["agent"]["haproxy_restarts"], 0, "{status:#}");
    assert_eq!(status["agent"]["failed_reloads"], 0, "{status:#}");
}

#[tokio::test]
async fn a_stalled_stats_socket_costs_a_bounded_wait_and_the_version_applies_when_it_answers() {
    let (backends, manifests) = fixture();
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;
    let socket = run.state_dir().join("run/admin.sock");
    let stall = Stall::at(&socket).await;

    // A new pod is a runtime change: the stats socket is the way.
    let before = run.desired_generation().await;
    run.write_manifest("endpoints.yaml", &endpoints(&backends, &["web-a", "web-b"]));
    let status = expect_failure_named(&run, before, "admin.sock").await;
    assert!(status["ready"] == true, "{status:#}");
    run.expect_routed_to(HOST, "/", "web").await;

    stall.end();
    run.expect_pods_reached(HOST, "/", &["web-a", "web-b"])
        .await;
    expect_converged_at(&run, before + 1).await;
}

#[tokio::test]
async fn a_master_cli_without_free_connections_costs_a_bounded_wait_and_the_version_applies_later()
{
    let (backends, manifests) = fixture();
    // No spares: a new Service takes a reload, through the master CLI.
    let options = RunOptions {
        config_tail: "  spareBackends: 0\n".to_string(),
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    run.wait_converged().await;
    let workers = run.worker_pids().await;
    let held = hold_every_connection(&run.state_dir().join("run/master.sock")).await;

    let before = run.desired_generation().await;
    let api = backends.pod("api-a").addr;
    run.write_manifest("api.yaml", &api_service(api.ip().to_string(), api.port()));
    let status = expect_failure_named(&run, before, "master.sock").await;
    assert!(status["ready"] == true, "{status:#}");
    assert_eq!(
        status["agent"]["worker_pid"].as_u64(),
        workers.first().map(|&pid| u64::from(pid)),
        "the old worker serves on: {status:#}"
    );
    run.expect_routed_to(HOST, "/", "web").await;

    drop(held);
    run.expect_route_eventually("api.example.com", "/", "api")
        .await;
    expect_converged_at(&run, before + 1).await;
}

/// Root is refused nothing by file modes: hawser, and the HAProxy it starts,
/// run without the capabilities that bypass them, so that a socket of mode
/// 000 refuses them as it would refuse any other user.
const WITHOUT_FILE_MODE_BYPASS: [&str; 3] = [
    "setpriv",
    "--bounding-set",
    "-dac_override,-dac_read_search",
];

/// The stats socket refuses hawser access (mode 000, hawser without the
/// capabilities that bypass file modes). Oracle: a runtime change and then
/// a change that needs a reload are each refused at once, naming the
/// socket, "permission denied" and when they are tried again; HAProxy is
/// never asked to reload (a reload would be verified through that socket):
/// the same worker serves the version before, ready, with no failed
/// reload. Once the socket lets hawser in, the newest version applies by
/// itself, with no further change.
#[tokio::test]
async fn a_stats_socket_that_refuses_access_costs_no_reload_and_the_version_applies_once_allowed() {
    let (backends, manifests) = fixture();
    let options = RunOptions {
        // No spares: a new Service takes a reload.
        config_tail: "  spareBackends: 0\n".to_string(),
        launcher: WITHOUT_FILE_MODE_BYPASS.map(String::from).to_vec(),
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    let converged = run.wait_converged().await;
    let worker = run.serving_worker().await;
    let socket = run.state_dir().join("run/admin.sock");
    set_mode(&socket, 0o000);

    let before = run.desired_generation().await;
    run.write_manifest("endpoints.yaml", &endpoints(&backends, &["web-a", "web-b"]));
    expect_denied(&run, before).await;
    let api = backends.pod("api-a").addr;
    run.write_manifest("api.yaml", &api_service(api.ip().to_string(), api.port()));
    let status = expect_denied(&run, before + 1).await;
    assert_eq!(status["ready"], true, "{status:#}");
    assert_eq!(
        status["agent"]["reloads"], converged["agent"]["reloads"],
        "no reload was started: {status:#}"
    );
    assert_eq!(status["agent"]["failed_reloads"], 0, "{status:#}");
    assert_eq!(
        status["agent"]["worker_pid"].as_u64(),
        Some(u64::from(worker)),
        "{status:#}"
    );
    run.expect_routed_to(HOST, "/", "web").await;

    set_mode(&socket, 0o600);
    run.expect_route_eventually("api.example.com", "/", "api")
        .await;
    run.expect_pods_reached(HOST, "/", &["web-a", "web-b"])
        .await;
    expect_converged_at(&run, before + 2).await;
}

/// Waits until the version after `before` is refused because the stats
/// socket refuses access; returns `/status`.
async fn expect_denied(run: &Run, before: u64) -> Value {
    let status = expect_failure_named(run, before, "admin.sock").await;
    let error = status["agent"]["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("permission denied"), "{status:#}");
    status
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}

/// Waits until hawser converged and checks it did on `generation`: the
/// version that failed applied, nothing newer.
async fn expect_converged_at(run: &Run, generation: u64) {
    let status = run.wait_converged().await;
    assert_eq!(
        status["desired_generation"], generation,
        "the same version applied, nothing newer: {status:#}"
    );
}

/// Waits until the agent refused the version after `before` for a reason
/// naming `socket`, and says it will try again; returns `/status`.
async fn expect_failure_named(run: &Run, before: u64, socket: &str) -> Value {
    let status = run.expect_outcome_after(before, "rejected").await;
    let error = status["agent"]["last_error"].as_str().unwrap_or_default();
    assert!(
        error.contains(socket) && error.contains("trying again in"),
        "{status:#}"
    );
    status
}

/// A Service `api` with one endpoint, and its Ingress.
fn api_service(ip: String, port: u16) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{ name: api, namespace: outside }}\n\
         spec:\n  ports: [{{ name: http, port: 80 }}]\n---\n\
         apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
         metadata:\n  name: api-1\n  namespace: outside\n  labels: {{ kubernetes.io/service-name: api }}\n\
         addressType: IPv4\nports: [{{ name: http, port: {port} }}]\n\
         endpoints:\n  - addresses: [\"{ip}\"]\n    targetRef: {{ kind: Pod, name: api-a }}\n---\n\
         apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: api, namespace: outside }}\n\
         spec:\n  ingressClassName: hawser\n  rules:\n    - host: api.example.com\n      http:\n        paths:\n\
         \x20         - path: /\n            pathType: Prefix\n            backend: {{ service: {{ name: api, port: {{ number: 80 }} }} }}\n"
    )
}

/// `reload` on the master CLI, again while the master still loads the
/// last one (HAProxy 3.1 and later say so rather than wait).
async fn reload_from_outside(master: &hawser_haproxy::MasterCli) {
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        match master.reload().await {
            Ok(_) => return,
            Err(e) if tokio::time::Instant::now() < deadline => {
                eprintln!("reload on the master CLI: {e}; again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("reload on the master CLI: {e}"),
        }
    }
}

/// Waits until HAProxy's workers are others than `old`; returns them.
async fn new_workers(run: &Run, old: &[u32]) -> Vec<u32> {
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    loop {
        // The master CLI is away while the master reloads.
        let now: Vec<u32> = match run.master().show_proc().await {
            Ok(table) => table.workers.iter().map(|w| w.pid).collect(),
            Err(_) => Vec::new(),
        };
        if !now.is_empty() && now.iter().all(|pid| !old.contains(pid)) {
            return now;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no new worker after an outside reload: {now:?}\n{}",
            run.output()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A listener standing where HAProxy's socket was: it accepts every
/// connection and answers none. HAProxy's socket is kept aside and put
/// back by [`Stall::end`].
struct Stall {
    socket: PathBuf,
    aside: PathBuf,
    accepting: tokio::task::JoinHandle<()>,
}

impl Stall {
    async fn at(socket: &Path) -> Stall {
        let aside = socket.with_extension("sock.aside");
        std::fs::rename(socket, &aside).expect("move HAProxy's socket aside");
        let listener = UnixListener::bind(socket).expect("bind the stalling socket");
        let accepting = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        Stall {
            socket: socket.to_path_buf(),
            aside,
            accepting,
        }
    }

    fn end(self) {
        self.accepting.abort();
        std::fs::rename(&self.aside, &self.socket).expect("put HAProxy's socket back");
    }
}

/// Opens connections to `socket` until it takes no more, and holds them.
async fn hold_every_connection(socket: &Path) -> Vec<UnixStream> {
    let mut held = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_millis(500), UnixStream::connect(socket)).await {
            Ok(Ok(stream)) => held.push(stream),
            _ => break,
        }
        assert!(held.len() < 10_000, "the master CLI takes every connection");
    }
    assert!(!held.is_empty(), "no connection to {}", socket.display());
    held
}
