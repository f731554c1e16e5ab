//! Seed 000: a certificate named directly by `crt` on a bind line (here a
//! config snippet's listener) is also written by hawser for an Ingress. When
//! the Ingress stops using it, the render no longer holds the file: that
//! version is refused by `haproxy -c` on the staged tree, never by a failed
//! reload; the live tree keeps the file, the old version keeps serving, a
//! server added at runtime stays in effect, and `/status` says why. Once the
//! reference is back, the next version applies by reload, the runtime-added
//! server still there (fixture `run_seed_000/`).

use crate::support;

use std::net::SocketAddr;

use support::{Backends, Manifests, Run, RunOptions, TestCertificate, pod};

const HOST: &str = "app.example.com";
const BACKEND: &str = "be_seed_app_http";
const CERT_FILE: &str = "certs/seed_app-tls.pem";

/// A TLS listener of the user's own that names the certificate file hawser
/// renders for Secret seed/app-tls directly, as the seed's TCP listener did.
fn direct_crt_snippet(addr: SocketAddr) -> String {
    format!(
        "templates:\n  snippets:\n    sections-direct-tls: |\n      frontend direct_tls\n        \
         bind {addr} ssl crt {CERT_FILE}\n        default_backend {BACKEND}\n"
    )
}

/// The Ingress: with or without its TLS entry, with or without a second
/// host routed to Service fresh.
fn ingress(tls: bool, fresh_host: bool) -> String {
    let rule = |host: &str, service: &str| {
        format!(
            "    - host: {host}\n      http:\n        paths:\n          - path: /\n            pathType: Prefix\n            \
             backend: {{ service: {{ name: {service}, port: {{ name: http }} }} }}\n"
        )
    };
    // Served over plain HTTP too: the test sends HTTP requests to a TLS host.
    let mut text = "apiVersion: networking.k8s.io/v1\nkind: Ingress\n\
                    metadata:\n  name: app\n  namespace: seed\n  \
                    annotations: { hawser.dev/ssl-redirect: \"false\" }\n\
                    spec:\n  ingressClassName: hawser\n"
        .to_string();
    if tls {
        text.push_str("  tls:\n    - hosts: [app.example.com]\n      secretName: app-tls\n");
    }
    text.push_str("  rules:\n");
    text.push_str(&rule(HOST, "app"));
    if fresh_host {
        text.push_str(&rule("fresh.example.com", "fresh"));
    }
    text
}

/// The EndpointSlice of Service app with the given pods.
fn slice(backends: &Backends, pods: &[&str]) -> String {
    let mut endpoints = String::new();
    let mut port = 0;
    for name in pods {
        let echo = echo(backends, name);
        port = echo.port();
        endpoints.push_str(&format!(
            "  - addresses: [\"{}\"]\n    conditions: {{ ready: true }}\n    targetRef: {{ kind: Pod, name: {name} }}\n",
            echo.ip()
        ));
    }
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: app-1\n  namespace: seed\n  \
         labels: {{ kubernetes.io/service-name: app }}\naddressType: IPv4\n\
         ports: [{{ name: http, port: {port} }}]\nendpoints:\n{endpoints}"
    )
}

fn echo(backends: &Backends, pod: &str) -> SocketAddr {
    backends
        .echos()
        .iter()
        .find(|e| e.pod.name == pod)
        .map(|e| e.addr)
        .expect("a started pod")
}

/// Asserts the direct-`crt` listener serves the app certificate and reaches
/// Service app.
async fn expect_direct_tls(run: &Run, listener: SocketAddr) {
    let response = run.get_tls_on(listener, Some(HOST), HOST, "/").await;
    assert_eq!(
        response.tls().subject_cn.as_deref(),
        Some(HOST),
        "{:?}",
        response.tls()
    );
    assert_eq!(response.status, 200, "{:?}", response.text());
    assert_eq!(response.echo().service, "app");
}

/// Asserts HAProxy lists `server` in the app backend.
async fn expect_live_server(run: &Run, server: &str) {
    let live = run
        .runtime()
        .show_servers_state(Some(BACKEND))
        .await
        .expect("show servers state");
    assert!(
        live.iter().any(|s| s.name == server && !s.in_maintenance()),
        "{server} should serve in {BACKEND}: {live:#?}"
    );
}

#[tokio::test]
async fn certificate_losing_its_last_user_while_a_bind_names_it_never_fails_a_reload() {
    let backends = Backends::start(&[
        pod("seed", "app", "app-a"),
        pod("seed", "app", "app-b"),
        pod("seed", "fresh", "fresh-a"),
    ]);
    let cert = TestCertificate::self_signed(HOST);
    let mut vars = backends.vars();
    vars.insert("APP_TLS_CRT".into(), cert.cert_yaml());
    vars.insert("APP_TLS_KEY".into(), cert.key_yaml());
    let manifests = Manifests::from_fixture("run_seed_000", &vars);
    let listener = Run::spare_address();
    let run = Run::start_with(
        manifests.path(),
        RunOptions {
            // No spare backends: the new Service below takes a reload.
            config_tail: format!("  spareBackends: 0\n{}", direct_crt_snippet(listener)),
            ..RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;
    expect_direct_tls(&run, listener).await;

    // An endpoint change, applied at runtime: server app-b is added.
    let app_b = echo(&backends, "app-b");
    let app_b_server = format!("ep_{}_{}", app_b.ip(), app_b.port());
    let before = run.desired_generation().await;
    run.write_manifest("app-slice.yaml", &slice(&backends, &["app-a", "app-b"]));
    let status = run.expect_outcome_after(before, "runtime").await;
    assert_eq!(
        status["agent"]["last_outcome"]["summary"],
        format!("add server {BACKEND}/{app_b_server}")
    );
    run.expect_pods_reached(HOST, "/", &["app-a", "app-b"])
        .await;
    let workers = run.worker_pids().await;
    let reloads = status["agent"]["reloads"].as_u64().expect("reloads");

    // The Ingress drops its TLS entry: the Secret loses its last user, and
    // the render no longer holds the file the bind line names.
    let serving = run.desired_generation().await;
    let live = std::fs::read_link(run.current_tree()).expect("tree/current");
    run.write_manifest("ingress.yaml", &ingress(false, false));
    let status = run.expect_outcome_after(serving, "rejected").await;
    let error = status["last_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("haproxy rejected the configuration")
            && error.contains(&format!(
                "unable to stat SSL certificate from file '{CERT_FILE}'"
            )),
        "/status should say haproxy -c refused the missing {CERT_FILE}: {status:#}"
    );
    assert_eq!(status["applied_generation"], serving, "{status:#}");
    assert_eq!(status["ready"], true, "{status:#}");
    assert_eq!(status["agent"]["failed_reloads"], 0, "{status:#}");
    // The live tree is the same and still holds the file; the old version
    // keeps serving, the runtime-added server included, on the same worker.
    assert_eq!(
        std::fs::read_link(run.current_tree()).expect("tree/current"),
        live
    );
    assert!(
        run.current_tree().join(CERT_FILE).is_file(),
        "{CERT_FILE} must stay in the live tree"
    );
    expect_direct_tls(&run, listener).await;
    run.expect_pods_reached(HOST, "/", &["app-a", "app-b"])
        .await;
    assert_eq!(run.worker_pids().await, workers);

    // The TLS entry comes back with a new host on a new Service: a new
    // backend, so a reload; the runtime-added server survives it.
    let refused = run.desired_generation().await;
    run.write_manifest("ingress.yaml", &ingress(true, true));
    let status = run.expect_outcome_after(refused, "reload").await;
    let agent = &status["agent"];
    assert_eq!(agent["reloads"], reloads + 1, "{status:#}");
    assert_eq!(
        agent["failed_reloads"], 0,
        "no reload ever failed: {status:#}"
    );
    assert!(status["last_error"].is_null(), "{status:#}");
    assert_ne!(run.worker_pids().await, workers, "a new worker serves");
    expect_live_server(&run, &app_b_server).await;
    run.expect_pods_reached(HOST, "/", &["app-a", "app-b"])
        .await;
    run.expect_routed_to("fresh.example.com", "/", "fresh")
        .await;
    expect_direct_tls(&run, listener).await;
    assert!(run.current_tree().join(CERT_FILE).is_file());
}
