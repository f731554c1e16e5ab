//! `hawser demo`: the built-in example, served for real on this machine.
//!
//! ```text
//!  examples/demo (embedded) ──► <state>/manifests ──render──► <state>/tree ──haproxy -c──► HAProxy
//!                                     │                                                     │
//!                                     └──► one echo backend per endpoint (127.0.0.x) ◄──────┘
//! ```
//!
//! HAProxy runs in the foreground on the rendered tree until Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use anyhow::Context as _;
use hawser_controller::{gate, write_tree};
use hawser_echo::{EchoConfig, EchoServer};
use hawser_haproxy::HaproxyBinary;
use hawser_model::{ServiceType, Store};
use hawser_render::{CONFIG_PATH, RenderConfig};
use tokio::process::Command;

use super::input;
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
    let haproxy = HaproxyBinary::locate()?;
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

    let mut config = RenderConfig::default();
    config.settings.bind_address = "127.0.0.1".to_string();
    config.settings.http_port = args.http_port;
    config.settings.https_port = args.https_port;
    let inputs = input::load_with(&manifests, config)?;
    let rendered = inputs.renderer.render(&inputs.manifests.store)?;
    input::report(&rendered);

    let backends = start_echo_backends(&inputs.manifests.store).await?;
    let tree = state.join("tree");
    gate::check_in(&haproxy, &rendered.files, &tree).await?;
    write_tree(&rendered.files, &tree)?;
    let mut proxy = Command::new(haproxy.path())
        .arg("-C")
        .arg(&tree)
        .args(["-f", CONFIG_PATH, "-db"])
        .stdin(Stdio::null())
        // Its own process group: Ctrl-C reaches hawser, which then stops it.
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", haproxy.path().display()))?;

    print_instructions(args, &state, &backends);
    tokio::select! {
        status = proxy.wait() => {
            anyhow::bail!("HAProxy exited ({}); see its messages above", status?);
        }
        () = super::shutdown_signal() => {
            println!("stopping");
        }
    }
    Ok(ExitCode::SUCCESS)
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
                        let mut config = EchoConfig::new(listen);
                        config.namespace = service.key.namespace.clone();
                        config.service = service.key.name.clone();
                        config.pod = endpoint.target.clone().unwrap_or_default();
                        let server = EchoServer::bind(config).await?;
                        started.push(format!("{listen} ({})", service.key));
                        tokio::spawn(server.run(std::future::pending()));
                    }
                }
            }
        }
    }
    Ok(started)
}

fn print_instructions(args: &DemoArgs, state: &Path, backends: &[String]) {
    let http = args.http_port;
    let https = args.https_port;
    println!();
    println!(
        "hawser demo: HAProxy serves examples/demo on 127.0.0.1:{http} (HTTP) and :{https} (HTTPS)"
    );
    println!("echo backends: {}", backends.join(", "));
    println!("rendered tree: {}", state.join("tree").display());
    println!();
    println!("Try:");
    println!(
        "  curl -H 'Host: shop.example.com' http://127.0.0.1:{http}/          # shop/web, two pods in turn"
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
