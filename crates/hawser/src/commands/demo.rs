//! `hawser demo`: the built-in example, served for real on this machine.
//!
//! ```text
//!  examples/demo (embedded) ──► <dir>/manifests ──► `hawser run` (watch, render, agent, HAProxy)
//!                                     │                                   │
//!                                     └──► one echo backend per endpoint (127.0.0.x) ◄──┘
//! ```
//!
//! A few seconds in, the demo edits a manifest (a third pod for shop/web) and
//! reports how the change was applied. Runs until Ctrl-C.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use hawser_agent::AgentHandle;
use hawser_echo::{EchoConfig, EchoServer};
use hawser_k8s::load_dir;
use hawser_model::{ServiceType, Store};
use hawser_render::RenderConfig;

use super::run::{self, RunOptions};
use crate::cli::DemoArgs;

/// The example manifests, as shipped in `examples/demo`.
const EXAMPLE: &[(&str, &str)] = &[
    (
        "ingress-class.yaml",
        include_str!("../../../../examples/demo/ingress-class.yaml"),
    ),
    (
        "shop.yaml",
        include_str!("../../../../examples/demo/shop.yaml"),
    ),
    (
        "fallback.yaml",
        include_str!("../../../../examples/demo/fallback.yaml"),
    ),
    (
        "tls.yaml",
        include_str!("../../../../examples/demo/tls.yaml"),
    ),
];

pub async fn run(args: &DemoArgs) -> anyhow::Result<ExitCode> {
    let temp;
    let state: PathBuf = match &args.state_dir {
        Some(dir) => dir.clone(),
        None => {
            temp = tempfile::Builder::new().prefix("hawser-demo-").tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let manifests = state.join("manifests");
    write_example(&manifests)?;
    let store = load_dir(&manifests)?.store;
    let mut backends = start_echo_backends(&store).await?;
    backends.push(start_echo(LIVE_EDIT_POD.0.parse()?, "shop", "web", LIVE_EDIT_POD.1).await?);

    let mut config = RenderConfig::default();
    config.settings.bind_address = "127.0.0.1".to_string();
    config.settings.http_port = args.http_port;
    config.settings.https_port = args.https_port;
    let options = RunOptions {
        manifests: manifests.clone(),
        config,
        state_dir: state.join("state"),
        admin: args.admin,
        health_port: args.health_port,
        min_reload_interval: Duration::from_secs(1),
        drift_interval: Duration::from_secs(30),
        stop_grace: Duration::from_secs(10),
    };
    let (http, https, admin) = (args.http_port, args.https_port, args.admin);
    run::serve(options, move |agent| async move {
        let mut status = agent.status();
        let ready =
            tokio::time::timeout(Duration::from_secs(30), status.wait_for(|s| s.is_ready())).await;
        if !matches!(ready, Ok(Ok(_))) {
            eprintln!("the example did not become ready; see the messages above");
            return;
        }
        print_instructions(http, https, admin, &state, &backends);
        tokio::spawn(live_edit(agent, manifests));
    })
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// The pod the demo adds to shop/web a few seconds in, to show an edit applied live.
const LIVE_EDIT_POD: (&str, &str) = ("127.0.0.6:18080", "web-7d9f-c");

/// Adds a third pod to shop/web by editing the manifest, and reports how it
/// was applied (at runtime: no reload).
async fn live_edit(agent: AgentHandle, manifests: PathBuf) {
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut outcomes = agent.outcomes();
    let path = manifests.join("shop.yaml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let endpoint = "  - addresses: [\"127.0.0.3\"]\n    conditions: { ready: true }\n    targetRef: { kind: Pod, name: web-7d9f-b }\n";
    let added = format!(
        "{endpoint}  - addresses: [\"127.0.0.6\"]\n    conditions: {{ ready: true }}\n    targetRef: {{ kind: Pod, name: {} }}\n",
        LIVE_EDIT_POD.1
    );
    if std::fs::write(&path, text.replacen(endpoint, &added, 1)).is_err() {
        return;
    }
    println!(
        "live edit: added pod {} to shop/web in {}",
        LIVE_EDIT_POD.1,
        path.display()
    );
    if let Ok(Ok(outcome)) = tokio::time::timeout(Duration::from_secs(10), outcomes.recv()).await {
        println!(
            "live edit: generation {} applied as {:?} in {} ms ({}); curl shop.example.com a few times to see the third pod",
            outcome.generation,
            outcome.kind,
            outcome.duration.as_millis(),
            outcome.summary
        );
    }
}

fn write_example(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, content) in EXAMPLE {
        let path = dir.join(name);
        std::fs::write(&path, content)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Starts one echo server per endpoint address and port the example's
/// EndpointSlices name, each answering with its Service and pod.
async fn start_echo_backends(store: &Store) -> anyhow::Result<Vec<String>> {
    let mut started = Vec::new();
    for service in store.services() {
        if !matches!(service.service_type, ServiceType::Endpoints) {
            continue;
        }
        for slice in store.endpoint_slices_for(&service.key) {
            for port in &slice.ports {
                for endpoint in &slice.endpoints {
                    for address in &endpoint.addresses {
                        let listen = format!("{address}:{}", port.port)
                            .parse()
                            .with_context(|| format!("endpoint {address}:{}", port.port))?;
                        let pod = endpoint.target.clone().unwrap_or_default();
                        started.push(
                            start_echo(listen, &service.key.namespace, &service.key.name, &pod)
                                .await?,
                        );
                    }
                }
            }
        }
    }
    Ok(started)
}

async fn start_echo(
    listen: SocketAddr,
    namespace: &str,
    service: &str,
    pod: &str,
) -> anyhow::Result<String> {
    let mut config = EchoConfig::new(listen);
    config.namespace = namespace.to_string();
    config.service = service.to_string();
    config.pod = pod.to_string();
    let server = EchoServer::bind(config).await?;
    tokio::spawn(server.run(std::future::pending()));
    Ok(format!("{listen} ({namespace}/{service} {pod})"))
}

fn print_instructions(http: u16, https: u16, admin: SocketAddr, state: &Path, backends: &[String]) {
    println!();
    println!(
        "hawser demo: HAProxy serves examples/demo on 127.0.0.1:{http} (HTTP) and :{https} (HTTPS)"
    );
    println!("echo backends: {}", backends.join(", "));
    println!(
        "manifests (edit them: changes apply live): {}",
        state.join("manifests").display()
    );
    println!("status: curl http://{admin}/status   metrics: curl http://{admin}/metrics");
    println!();
    println!("Try:");
    println!(
        "  curl -H 'Host: shop.example.com' http://127.0.0.1:{http}/          # shop/web, its pods in turn"
    );
    println!(
        "  curl -H 'Host: shop.example.com' http://127.0.0.1:{http}/api/items # shop/api (Prefix /api)"
    );
    println!(
        "  curl -H 'Host: shop.example.com' http://127.0.0.1:{http}/apix      # shop/web: prefixes match whole segments"
    );
    println!(
        "  curl -H 'Host: elsewhere.test' http://127.0.0.1:{http}/            # ops/fallback, the default backend"
    );
    println!(
        "  curl -k --resolve shop.example.com:{https}:127.0.0.1 https://shop.example.com:{https}/  # TLS with the shop certificate"
    );
    println!();
    println!("Press Ctrl-C to stop.");
}
