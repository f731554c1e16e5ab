//! The scale benchmark: how long a change takes to reach traffic in `hawser
//! run` at thousands of Ingresses under load, against what the same HAProxy
//! needs alone for the same class of operation, measured in the same run.
//!
//! ```text
//!  manifests: N Ingresses over S Services (2 echo pods each)
//!      │                                         C clients of load (every answer checked)
//!      ▼                                                 │
//!  hawser run ──► HAProxy ◄──────────────────────────────┘
//!      ▲
//!  change written (renamed into place) ── polls on fresh connections ──► first correct answer
//!
//!  HAProxy alone (the limit), under the same load: `add map` / `add server`
//!  on its runtime API (into a spare backend for a new Service), a reload
//!  through its master CLI, each until the first correct answer. Its configuration is small (one map, one backend): the
//!  limit is HAProxy's cost of the operation, not of hawser's configuration.
//! ```
//!
//! ```sh
//! cargo bench -p hawser --bench scale [-- --ingresses 3000 --services 50 --clients 8 --changes 20]
//!                                         [--cluster] [--baseline PATH-TO-ANOTHER-HAWSER] [--log PATH]
//! ```
//!
//! Local mode (the default) writes each change as a file renamed into the
//! manifests directory of `hawser run`. `--cluster` runs `hawser controller
//! --kubernetes` against the fake API server instead, pushing to one `hawser
//! agent` over mutual TLS, and each change is an object applied to the fake
//! (watch event → first correct answer). With `--baseline`, the same scenario
//! runs first against that binary (an older build, say), then against this
//! one: before and after in one run.
//!
//! The classes: a new Ingress to an existing Service, an endpoint swapped,
//! an endpoint swapped right behind a new Ingress (while the agent still
//! stages and checks the Ingress's version), a new Service and its Ingress.
//!
//! Prints, per class of change, the median and p95 in milliseconds, the
//! ratio of each to the limit measured in the same run, how many changes took
//! a reload, then the requests of the load and how many failed, and hawser's
//! peak resident memory. Absolute times on a shared machine are noisy; the
//! ratios are what to compare (docs/benchmarks.md).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails by panicking"
)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hawser_fake_api::FakeApi;
use hawser_haproxy::{AdminState, CommandBatch, MasterCli, RuntimeApi};
use serde_json::Value;
use support::{
    AgentProc, Backends, ControllerProc, Load, LoadTarget, Pki, Pod, Run, RunOptions, pod,
};

const NAMESPACE: &str = "scale";

/// The longest one change may take before the benchmark gives up on it.
const GIVE_UP: Duration = Duration::from_secs(30);

/// Pause between two changes, so each is a lone change, not a burst.
const BETWEEN: Duration = Duration::from_millis(1200);

#[derive(Debug, Clone)]
struct Options {
    ingresses: usize,
    services: usize,
    clients: usize,
    changes: usize,
    cluster: bool,
    baseline: Option<PathBuf>,
    /// Where to write what hawser logged (its phases, change by change).
    log: Option<PathBuf>,
}

impl Options {
    fn from_args() -> Options {
        let mut options = Options {
            ingresses: 3000,
            services: 50,
            clients: 8,
            changes: 20,
            cluster: false,
            baseline: None,
            log: None,
        };
        let args: Vec<String> = std::env::args().collect();
        options.cluster = args.iter().any(|a| a == "--cluster");
        for pair in args.windows(2) {
            let value = || pair[1].parse().expect("a number");
            match pair[0].as_str() {
                "--ingresses" => options.ingresses = value(),
                "--services" => options.services = value(),
                "--clients" => options.clients = value(),
                "--changes" => options.changes = value(),
                "--baseline" => options.baseline = Some(PathBuf::from(&pair[1])),
                "--log" => options.log = Some(PathBuf::from(&pair[1])),
                _ => {}
            }
        }
        options
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not run
    // benchmarks with harness = false unless asked, so both are fine.
    let options = Options::from_args();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            if let Some(baseline) = &options.baseline {
                let table = measure(&options, Some(baseline.clone())).await;
                println!("\nbaseline ({}):{table}", baseline.display());
            }
            let table = measure(&options, None).await;
            println!("\nthis build:{table}");
        });
}

fn service(index: usize) -> String {
    format!("svc{index}")
}

/// The whole scenario against `binary` (this build's when `None`); the
/// report, as a table.
async fn measure(options: &Options, binary: Option<PathBuf>) -> String {
    let services: Vec<String> = (0..options.services).map(service).collect();
    // Two pods per Service, a spare pod for the endpoint swaps, and the pods
    // of the Services that appear during the run.
    let mut pods: Vec<Pod> = Vec::new();
    for name in &services {
        for suffix in ["a", "b"] {
            pods.push(pod(NAMESPACE, name, &format!("{name}-{suffix}")));
        }
    }
    // Each swap moves one Service to its spare pod.
    let swapped: Vec<usize> = (0..options.changes.min(options.services)).collect();
    for &index in &swapped {
        let name = service(index);
        pods.push(pod(NAMESPACE, &name, &format!("{name}-spare")));
    }
    for index in 0..options.changes {
        let name = format!("new{index}");
        pods.push(pod(NAMESPACE, &name, &format!("{name}-a")));
    }
    eprintln!("starting {} echo pods", pods.len());
    let backends = Backends::start(&pods);

    let manifests = tempfile::tempdir().expect("manifests dir");
    let objects = initial_objects(options, &services, &backends);
    let started = Instant::now();
    let run = if options.cluster {
        Deployment::cluster(&objects, binary).await
    } else {
        Deployment::local(manifests.path(), &objects, binary).await
    };
    let first_answer = wait_for(&run, "h0.example.com", "svc0").await;
    eprintln!(
        "{} serves {} Ingresses: answering after {:.2?} ({first_answer:.2?} for the first request)",
        run.name(),
        options.ingresses,
        started.elapsed()
    );

    let targets: Vec<LoadTarget> = (0..options.ingresses.min(200))
        .map(|i| {
            let name = service(i % options.services);
            LoadTarget::new(
                &format!("h{i}.example.com"),
                &[
                    &format!("{name}-a"),
                    &format!("{name}-b"),
                    &format!("{name}-spare"),
                ],
            )
        })
        .collect();
    let load = Load::start(run.http(), options.clients, targets);

    let mut rows = Vec::new();
    // HAProxy alone gets the same load, so both are measured under it.
    let limits = HaproxyAlone::start(&backends, options.changes).await;
    let alone_load = Load::start(
        limits.http,
        options.clients,
        vec![LoadTarget::new(
            "h0.example.com",
            &["svc0-a", "svc0-b", "svc0-spare"],
        )],
    );

    // A new Ingress to an existing Service.
    let reloads_before = reloads(&run).await;
    let mut times = Vec::new();
    for index in 0..options.changes {
        let host = format!("added{index}.example.com");
        let name = service(index % options.services);
        let manifest = ingress(&format!("added{index}"), &host, &name);
        let began = Instant::now();
        run.apply(&format!("added{index}.yaml"), &manifest);
        times.push(until(&run, &host, &name, began).await);
        tokio::time::sleep(BETWEEN).await;
    }
    let limit = limits.add_map(options.changes).await;
    rows.push(Row::new(
        "a new Ingress to an existing Service",
        times,
        reloads_since(&run, reloads_before).await,
        limit,
        "`add map` + first answer",
    ));

    // An endpoint swapped: a Service's pods replaced by its spare.
    let reloads_before = reloads(&run).await;
    let mut times = Vec::new();
    for &index in &swapped {
        let name = service(index);
        let spare = format!("{name}-spare");
        let began = Instant::now();
        run.apply(
            &format!("slice-{name}.yaml"),
            &slice(&name, &[&spare], &backends),
        );
        times.push(until_pod(&run, &format!("h{index}.example.com"), &spare, began).await);
        tokio::time::sleep(BETWEEN).await;
    }
    let swap_limit = limits.add_server(options.changes).await;
    rows.push(Row::new(
        "an endpoint swapped",
        times,
        reloads_since(&run, reloads_before).await,
        swap_limit.clone(),
        "`add server` + first answer",
    ));

    // An endpoint swapped right behind another change: a new Ingress goes
    // live, and the swap back to the Service's first pod is made as soon as
    // the Ingress answers, while the agent still stages and checks the
    // Ingress's version. Timed from the swap; the limit is the swap's.
    let reloads_before = reloads(&run).await;
    let mut times = Vec::new();
    for &index in &swapped {
        let name = service(index);
        let host = format!("behind{index}.example.com");
        let manifest = ingress(&format!("behind{index}"), &host, &name);
        run.apply(&format!("behind{index}.yaml"), &manifest);
        wait_for(&run, &host, &name).await;
        let pod = format!("{name}-a");
        let began = Instant::now();
        run.apply(
            &format!("slice-{name}.yaml"),
            &slice(&name, &[&pod], &backends),
        );
        times.push(until_pod(&run, &format!("h{index}.example.com"), &pod, began).await);
        tokio::time::sleep(BETWEEN).await;
    }
    rows.push(Row::new(
        "an endpoint swapped right behind a new Ingress",
        times,
        reloads_since(&run, reloads_before).await,
        swap_limit,
        "`add server` + first answer",
    ));

    // A new Service with its Ingress.
    let reloads_before = reloads(&run).await;
    let mut times = Vec::new();
    for index in 0..options.changes {
        let name = format!("new{index}");
        let host = format!("{name}.example.com");
        let manifest = format!(
            "{}---\n{}---\n{}",
            service_manifest(&name),
            slice(&name, &[&format!("{name}-a")], &backends),
            ingress(&name, &host, &name)
        );
        let began = Instant::now();
        run.apply(&format!("{name}.yaml"), &manifest);
        times.push(until(&run, &host, &name, began).await);
        tokio::time::sleep(BETWEEN).await;
    }
    let limit = limits.lend_spare(options.changes).await;
    rows.push(Row::new(
        "a new Service and its Ingress",
        times,
        reloads_since(&run, reloads_before).await,
        limit,
        "`add server` to a spare + `add map` + first answer",
    ));
    let mut reload = limits.reload(options.changes).await;
    reload.sort();

    let report = load.stop().await;
    let alone_report = alone_load.stop().await;
    let rss = peak_rss_mib(run.pid());
    if let Some(path) = &options.log {
        std::fs::write(path, run.output()).expect("write the log");
    }
    let mut out = String::new();
    writeln!(
        out,
        "\n{}: {} Ingresses over {} Services, {} clients of load\n",
        run.name(),
        options.ingresses,
        options.services,
        options.clients
    )
    .unwrap();
    writeln!(
        out,
        "| change | hawser median / p95 | reloads | HAProxy alone: median | ratio median / p95 |"
    )
    .unwrap();
    writeln!(out, "|---|---|---|---|---|").unwrap();
    for row in &rows {
        writeln!(out, "{row}").unwrap();
    }
    writeln!(out).unwrap();
    for row in &rows {
        let samples: Vec<String> = row.samples.iter().map(|ms| format!("{ms:.1}")).collect();
        writeln!(out, "{} (ms, sorted): {}", row.what, samples.join(" ")).unwrap();
    }
    writeln!(
        out,
        "\nHAProxy alone, a reload + first answer (for reference): median {:.1} ms",
        millis(percentile(&reload, 50))
    )
    .unwrap();
    writeln!(out, "load on hawser: {report}").unwrap();
    for failure in &report.first_failures {
        writeln!(out, "  {failure}").unwrap();
    }
    writeln!(out, "load on HAProxy alone: {alone_report}").unwrap();
    if let Some(rss) = rss {
        writeln!(out, "{} peak RSS: {rss:.1} MiB", run.name()).unwrap();
    }
    out
}

/// One class of change, measured.
struct Row {
    what: &'static str,
    /// Every time, sorted, in milliseconds.
    samples: Vec<f64>,
    median: f64,
    p95: f64,
    count: usize,
    reloads: u64,
    limit: f64,
    limit_what: &'static str,
}

impl Row {
    fn new(
        what: &'static str,
        mut times: Vec<Duration>,
        reloads: u64,
        mut limit: Vec<Duration>,
        limit_what: &'static str,
    ) -> Row {
        times.sort();
        limit.sort();
        Row {
            what,
            samples: times.iter().copied().map(millis).collect(),
            median: millis(percentile(&times, 50)),
            p95: millis(percentile(&times, 95)),
            count: times.len(),
            reloads,
            limit: millis(percentile(&limit, 50)),
            limit_what,
        }
    }
}

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "| {} | {:.1} / {:.1} ms | {} of {} | {}: {:.1} ms | {:.1}× / {:.1}× |",
            self.what,
            self.median,
            self.p95,
            self.reloads,
            self.count,
            self.limit_what,
            self.limit,
            self.median / self.limit,
            self.p95 / self.limit
        )
    }
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = (sorted.len() * percent).div_ceil(100).max(1) - 1;
    sorted[index.min(sorted.len() - 1)]
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The objects served from the start, as manifest files (name, YAML).
fn initial_objects(
    options: &Options,
    services: &[String],
    backends: &Backends,
) -> Vec<(String, String)> {
    let mut files = vec![(
        "class.yaml".to_string(),
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: hawser\n\
         spec:\n  controller: hawser.dev/ingress-controller\n"
            .to_string(),
    )];
    let mut text = String::new();
    for name in services {
        text.push_str(&service_manifest(name));
        text.push_str("---\n");
        let pods = [format!("{name}-a"), format!("{name}-b")];
        let pods: Vec<&str> = pods.iter().map(String::as_str).collect();
        files.push((format!("slice-{name}.yaml"), slice(name, &pods, backends)));
    }
    files.push(("services.yaml".to_string(), text));
    let mut text = String::new();
    for index in 0..options.ingresses {
        let name = service(index % options.services);
        text.push_str(&ingress(
            &format!("ing{index}"),
            &format!("h{index}.example.com"),
            &name,
        ));
        text.push_str("---\n");
    }
    files.push(("ingresses.yaml".to_string(), text));
    files
}

fn service_manifest(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\n\
         spec:\n  ports:\n    - name: http\n      port: 80\n"
    )
}

/// The EndpointSlice of Service `name` with `pods` (all on the Service's port).
fn slice(name: &str, pods: &[&str], backends: &Backends) -> String {
    let port = backends.pod(pods[0]).addr.port();
    let mut text = format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}-1\n  namespace: {NAMESPACE}\n\
         \x20 labels:\n    kubernetes.io/service-name: {name}\naddressType: IPv4\n\
         ports:\n  - name: http\n    port: {port}\nendpoints:\n"
    );
    for pod in pods {
        let addr = backends.pod(pod).addr;
        writeln!(
            text,
            "  - addresses: [\"{}\"]\n    conditions: {{ready: true}}\n    targetRef: {{kind: Pod, name: {pod}}}",
            addr.ip()
        )
        .unwrap();
    }
    text
}

fn ingress(name: &str, host: &str, service: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\n\
         spec:\n  ingressClassName: hawser\n  rules:\n    - host: {host}\n      http:\n        paths:\n\
         \x20         - path: /\n            pathType: Prefix\n            backend:\n              service:\n\
         \x20               name: {service}\n                port:\n                  number: 80\n"
    )
}

/// How long until `host` is answered by Service `service`.
async fn wait_for(run: &Deployment, host: &str, service: &str) -> Duration {
    until(run, host, service, Instant::now()).await
}

/// Polls with a fresh connection each time until Service `service` answers
/// `host`; the time since `began`.
async fn until(run: &Deployment, host: &str, service: &str, began: Instant) -> Duration {
    poll(run.http(), host, began, |reply| reply.service == service).await
}

async fn until_pod(run: &Deployment, host: &str, pod: &str, began: Instant) -> Duration {
    poll(run.http(), host, began, |reply| reply.pod == pod).await
}

/// How often a new poll starts while earlier ones are still waiting.
const POLL_EVERY: Duration = Duration::from_micros(500);

/// How many polls may be on their way at once.
const POLLS_AT_ONCE: usize = 4;

/// Polls with a fresh connection each until one answers as `done` asks; the
/// time since `began` to that first correct answer.
///
/// A new poll starts every `POLL_EVERY`, up to `POLLS_AT_ONCE` on their way,
/// rather than one after another: under load a request takes a few
/// milliseconds, and a change that goes live just after a poll was sent
/// would otherwise be seen only by the next one, a whole request later.
/// HAProxy alone is measured with the same polls.
async fn poll(
    addr: SocketAddr,
    host: &str,
    began: Instant,
    done: impl Fn(&hawser_echo::EchoReply) -> bool,
) -> Duration {
    let mut polls = tokio::task::JoinSet::new();
    let mut next = tokio::time::Instant::now();
    loop {
        if polls.len() < POLLS_AT_ONCE && tokio::time::Instant::now() >= next {
            let host = host.to_string();
            polls.spawn(async move { support::http1_get(addr, &host, "/").await });
            next = tokio::time::Instant::now() + POLL_EVERY;
        }
        let answered = tokio::select! {
            joined = polls.join_next(), if !polls.is_empty() => joined,
            () = tokio::time::sleep_until(next), if polls.len() < POLLS_AT_ONCE => None,
        };
        if let Some(Ok(Ok(response))) = answered
            && response.status == 200
            && serde_json::from_slice::<hawser_echo::EchoReply>(&response.body)
                .is_ok_and(|reply| done(&reply))
        {
            return began.elapsed();
        }
        assert!(began.elapsed() < GIVE_UP, "{host} never answered");
    }
}

/// The reloads HAProxy's master counts (`show proc`).
async fn reloads(run: &Deployment) -> u64 {
    let table = run.master().show_proc().await.expect("show proc");
    u64::from(table.master.reloads)
}

async fn reloads_since(run: &Deployment, before: u64) -> u64 {
    reloads(run).await - before
}

/// What serves the scenario: `hawser run`, or a controller reading the
/// fake API server and the agent it pushes to.
enum Deployment {
    Local(Run),
    Cluster {
        fake: FakeApi,
        // Boxed: the largest part, and the variants should weigh alike.
        agent: Box<AgentProc>,
        controller: ControllerProc,
        _kubeconfig: tempfile::NamedTempFile,
        _pki: Pki,
    },
}

impl Deployment {
    async fn local(
        dir: &Path,
        objects: &[(String, String)],
        binary: Option<PathBuf>,
    ) -> Deployment {
        for (file, text) in objects {
            std::fs::write(dir.join(file), text).unwrap();
        }
        let options = RunOptions {
            binary,
            ..RunOptions::default()
        };
        Deployment::Local(Run::start_with(dir, options).await)
    }

    async fn cluster(objects: &[(String, String)], binary: Option<PathBuf>) -> Deployment {
        let pki = Pki::bootstrap();
        let agent = AgentProc::start_with_binary(&pki.agent_dir(), binary.as_deref());
        let (fake, addr) = FakeApi::start_http().await;
        let infrastructure = format!(
            "apiVersion: hawser.dev/v1alpha1\nkind: HawserConfig\nmetadata: {{name: hawser, namespace: hawser}}\n\
             spec:\n  agents:\n    selector: app.kubernetes.io/component=haproxy\n    port: {port}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata:\n  name: haproxy-0\n  namespace: hawser\n\
             \x20 labels: {{app.kubernetes.io/component: haproxy}}\n\
             spec:\n  containers: [{{name: haproxy, image: haproxy}}]\n\
             status:\n  podIP: {ip}\n  conditions: [{{type: Ready, status: \"True\"}}]\n",
            port = agent.listen.port(),
            ip = agent.listen.ip()
        );
        apply_to(&fake, &infrastructure);
        for (_, text) in objects {
            apply_to(&fake, text);
        }
        let kubeconfig = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(kubeconfig.path(), FakeApi::kubeconfig(addr, "hawser")).unwrap();
        let controller = ControllerProc::cluster_with_binary(
            kubeconfig.path(),
            &pki.controller_dir(),
            &["--namespace", "hawser", "--identity", "hawser-controller-0"],
            binary.as_deref(),
        );
        Deployment::Cluster {
            fake,
            agent: Box::new(agent),
            controller,
            _kubeconfig: kubeconfig,
            _pki: pki,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Deployment::Local(_) => "hawser run (local mode)",
            Deployment::Cluster { .. } => "hawser controller --kubernetes + hawser agent",
        }
    }

    fn http(&self) -> SocketAddr {
        match self {
            Deployment::Local(run) => run.http,
            Deployment::Cluster { agent, .. } => agent.http,
        }
    }

    /// A change: a file renamed into place, or its objects applied.
    fn apply(&self, file: &str, text: &str) {
        match self {
            Deployment::Local(run) => run.write_manifest(file, text),
            Deployment::Cluster { fake, .. } => apply_to(fake, text),
        }
    }

    /// The master CLI of the HAProxy that serves.
    fn master(&self) -> MasterCli {
        match self {
            Deployment::Local(run) => run.master(),
            Deployment::Cluster { agent, .. } => {
                MasterCli::new(agent.state_dir().join("run/master.sock"))
            }
        }
    }

    /// What hawser logged: `hawser run`'s, or the controller's then the agent's.
    fn output(&self) -> String {
        match self {
            Deployment::Local(run) => run.output(),
            Deployment::Cluster {
                agent, controller, ..
            } => format!("{}\n{}", controller.output(), agent.output()),
        }
    }

    /// The controller's process: `hawser run`, or `hawser controller`.
    fn pid(&self) -> Option<u32> {
        match self {
            Deployment::Local(run) => run.pid(),
            Deployment::Cluster { controller, .. } => Some(controller.pid()),
        }
    }
}

/// Applies every document of `text` to the fake API server.
fn apply_to(fake: &FakeApi, text: &str) {
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::api::discovery::v1 as discovery;
    use k8s_openapi::api::networking::v1 as networking;
    use kube::api::ApiResource;
    // One document at a time: a parser's document budget is not the point.
    for document in text.split("---\n") {
        let object: Value = serde_saphyr::from_str(document).expect("YAML");
        if object.is_null() {
            continue;
        }
        let resource = match object["kind"].as_str().expect("a kind") {
            "IngressClass" => ApiResource::erase::<networking::IngressClass>(&()),
            "Ingress" => ApiResource::erase::<networking::Ingress>(&()),
            "Service" => ApiResource::erase::<core::Service>(&()),
            "Pod" => ApiResource::erase::<core::Pod>(&()),
            "EndpointSlice" => ApiResource::erase::<discovery::EndpointSlice>(&()),
            "HawserConfig" => ApiResource::erase::<hawser_crd::HawserConfig>(&()),
            other => panic!("the scenario has no {other}"),
        };
        fake.apply_dynamic(&resource, object);
    }
}

/// The peak resident memory of process `pid`, in MiB.
fn peak_rss_mib(pid: Option<u32>) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The same HAProxy binary alone, serving one map-routed backend: what
/// the operations hawser uses take without hawser.
struct HaproxyAlone {
    dir: tempfile::TempDir,
    http: SocketAddr,
    runtime: RuntimeApi,
    master: MasterCli,
    pods: Vec<(String, SocketAddr)>,
    _process: support::ChildGuard,
}

impl HaproxyAlone {
    /// Serves with `spares` empty backends declared ahead (`sp<n>`).
    async fn start(backends: &Backends, spares: usize) -> HaproxyAlone {
        let dir = tempfile::tempdir().expect("haproxy dir");
        let http = Run::spare_address();
        let pods: Vec<(String, SocketAddr)> = backends
            .echos()
            .iter()
            .filter(|e| e.pod.service == "svc0")
            .map(|e| (e.pod.name.clone(), e.addr))
            .collect();
        std::fs::create_dir_all(dir.path().join("maps")).unwrap();
        std::fs::write(dir.path().join("maps/routes.map"), "h0.example.com be0\n").unwrap();
        write_alone_config(dir.path(), http, pods[0].1, spares);
        let mut command = std::process::Command::new(support::haproxy_binary());
        command
            .current_dir(dir.path())
            .args(["-W", "-db", "-S"])
            .arg(format!(
                "{},mode,600",
                dir.path().join("master.sock").display()
            ))
            .arg("-f")
            .arg("haproxy.cfg");
        let process = support::ChildGuard::spawn("haproxy alone", &mut command);
        let alone = HaproxyAlone {
            runtime: RuntimeApi::new(dir.path().join("admin.sock")),
            master: MasterCli::new(dir.path().join("master.sock")),
            dir,
            http,
            pods,
            _process: process,
        };
        let began = Instant::now();
        poll(alone.http, "h0.example.com", began, |_| true).await;
        alone
    }

    /// `add map` of a new host, until it is answered.
    async fn add_map(&self, times: usize) -> Vec<Duration> {
        let mut durations = Vec::new();
        for index in 0..times {
            let host = format!("alone{index}.example.com");
            let began = Instant::now();
            self.runtime
                .add_map("maps/routes.map", &host, "be0")
                .await
                .expect("add map");
            durations.push(poll(self.http, &host, began, |_| true).await);
        }
        durations
    }

    /// `add server` of a pod and the one serving before put in
    /// maintenance, in one session as hawser sends them, until the new one
    /// answers.
    async fn add_server(&self, times: usize) -> Vec<Duration> {
        let mut durations = Vec::new();
        let mut previous = "s".to_string();
        for index in 0..times {
            let (name, addr) = &self.pods[(index + 1) % self.pods.len()];
            let server = format!("s{index}");
            let began = Instant::now();
            let mut batch = CommandBatch::new();
            batch
                .add_server("be0", &server, addr.ip(), addr.port(), &[])
                .unwrap();
            batch.enable_server("be0", &server).unwrap();
            batch
                .set_server_state("be0", &previous, AdminState::Maint)
                .unwrap();
            self.runtime
                .run_batch(&batch)
                .await
                .expect("add server, enable it, the previous one in maintenance");
            durations.push(poll(self.http, "h0.example.com", began, |r| &r.pod == name).await);
            previous = server;
        }
        durations
    }

    /// What a new Service served from a spare takes: `add server` (and
    /// `enable server`, in one session) into an empty backend declared
    /// ahead, `add map` of a new host to it, until the host is answered.
    async fn lend_spare(&self, times: usize) -> Vec<Duration> {
        let mut durations = Vec::new();
        for index in 0..times {
            let (name, addr) = &self.pods[index % self.pods.len()];
            let (backend, host) = (format!("sp{index}"), format!("lent{index}.example.com"));
            let began = Instant::now();
            let mut batch = CommandBatch::new();
            batch
                .add_server(&backend, "s", addr.ip(), addr.port(), &[])
                .unwrap();
            batch.enable_server(&backend, "s").unwrap();
            self.runtime
                .run_batch(&batch)
                .await
                .expect("add server and enable it");
            self.runtime
                .add_map("maps/routes.map", &host, &backend)
                .await
                .expect("add map");
            durations.push(poll(self.http, &host, began, |r| &r.pod == name).await);
        }
        durations
    }

    /// A new host written to the map file, then a reload through the master
    /// CLI, until the new worker answers it.
    async fn reload(&self, times: usize) -> Vec<Duration> {
        let mut durations = Vec::new();
        let mut map = String::from("h0.example.com be0\n");
        for index in 0..times {
            let host = format!("reloaded{index}.example.com");
            writeln!(map, "{host} be0").unwrap();
            let began = Instant::now();
            std::fs::write(self.dir.path().join("maps/routes.map"), &map).unwrap();
            self.master.reload().await.expect("reload");
            durations.push(poll(self.http, &host, began, |_| true).await);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        durations
    }
}

fn write_alone_config(dir: &Path, http: SocketAddr, pod: SocketAddr, spares: usize) {
    let mut config = format!(
        "global\n  stats socket {admin} mode 600 level admin expose-fd listeners\n\
         defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
         frontend web\n  bind {http}\n  use_backend %[req.hdr(host),lower,map(maps/routes.map)]\n\
         backend be0\n  server s {pod}\n",
        admin = dir.join("admin.sock").display()
    );
    for index in 0..spares {
        writeln!(config, "backend sp{index}\n  balance roundrobin").unwrap();
    }
    std::fs::write(dir.join("haproxy.cfg"), config).unwrap();
}
