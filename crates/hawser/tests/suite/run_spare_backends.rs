//! `hawser run`: a new Service is served from a spare backend, with no
//! reload (the HAProxy worker stays the same process), through an Ingress
//! and through an HTTPRoute alike; a pool that runs dry takes one reload
//! and comes back refilled, twice as large; a Service that goes needs no
//! reload either (fixture `run_spare_backends/`).
//!
//! Oracle: the worker PIDs and the reload count, which only a reload
//! changes, and the echo server's answer naming the pod that served.

use crate::support;

use serde_json::Value;
use support::{Backends, Manifests, Run, RunOptions, pod};

/// Service `name` in namespace `spares` with its one pod `<name>-a`, and
/// what routes to it: an Ingress, or an HTTPRoute on the Gateway `edge`.
fn service(backends: &Backends, name: &str, route: Route) -> String {
    let echo = backends.pod(&format!("{name}-a"));
    let (ip, port) = (echo.addr.ip(), echo.addr.port());
    let service = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{ name: {name}, namespace: spares }}\n\
         spec:\n  ports: [{{ name: http, port: 80 }}]\n---\n\
         apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
         metadata:\n  name: {name}-1\n  namespace: spares\n  labels: {{ kubernetes.io/service-name: {name} }}\n\
         addressType: IPv4\nports: [{{ name: http, port: {port} }}]\nendpoints:\n  - addresses: [\"{ip}\"]\n---\n"
    );
    let route = match route {
        Route::Ingress => format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: {name}, namespace: spares }}\n\
             spec:\n  ingressClassName: hawser\n  rules:\n    - host: {name}.example.com\n      http:\n        paths:\n\
             \x20         - path: /\n            pathType: Prefix\n            backend: {{ service: {{ name: {name}, port: {{ number: 80 }} }} }}\n"
        ),
        Route::HttpRoute => format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{ name: {name}, namespace: spares }}\n\
             spec:\n  parentRefs: [{{ name: edge }}]\n  hostnames: [\"{name}.example.com\"]\n\
             \x20 rules:\n    - backendRefs: [{{ name: {name}, port: 80 }}]\n"
        ),
    };
    service + &route
}

#[derive(Clone, Copy)]
enum Route {
    Ingress,
    HttpRoute,
}

/// Makes a change to the manifests and waits until the agent applied it;
/// returns the status then.
async fn apply(run: &Run, change: impl FnOnce()) -> Value {
    let before = run.status().await["desired_generation"]
        .as_u64()
        .unwrap_or(0);
    change();
    run.wait_for_status("the change applied", |s| {
        s["applied_generation"].as_u64().unwrap_or(0) > before
            && s["desired_generation"] == s["applied_generation"]
    })
    .await
}

async fn expect_pod(run: &Run, host: &str, pod: &str) {
    let response = run.get(host, "/").await;
    assert_eq!(
        response.status,
        200,
        "{host}: {}\n{}",
        response.text(),
        run.output()
    );
    assert_eq!(response.echo().pod, pod, "{host}");
}

#[tokio::test]
async fn new_services_are_served_from_spares_and_a_dry_pool_refills_at_one_reload() {
    let names = ["first", "second", "third", "fourth"];
    let pods: Vec<_> = names
        .iter()
        .map(|n| pod("spares", n, &format!("{n}-a")))
        .collect();
    let backends = Backends::start(&pods);
    let manifests = Manifests::from_fixture("run_spare_backends", &backends.vars());
    let options = RunOptions {
        config_tail: "  spareBackends: 2\n".to_string(),
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    run.wait_converged().await;
    expect_pod(&run, "first.example.com", "first-a").await;
    let workers = run.worker_pids().await;
    let reloads = run.status().await["reloads"].clone();

    // Two new Services, one per kind of route: each borrows a spare.
    for (name, route) in [("second", Route::Ingress), ("third", Route::HttpRoute)] {
        let text = service(&backends, name, route);
        let status = apply(&run, || run.write_manifest(&format!("{name}.yaml"), &text)).await;
        assert_eq!(
            status["agent"]["last_outcome"]["kind"], "runtime",
            "{name}: {status:#}"
        );
        expect_pod(&run, &format!("{name}.example.com"), &format!("{name}-a")).await;
        let lent = &status["controller"]["spare_backends"]["lent"];
        let serving = lent.as_object().unwrap().values();
        let backend = format!("be_spares_{name}_80");
        assert!(
            serving.clone().any(|to| to["backend"] == backend.as_str()),
            "{backend} is not shown lent a spare: {lent:#}"
        );
    }
    assert_eq!(run.worker_pids().await, workers, "no new worker");
    assert_eq!(run.status().await["reloads"], reloads, "no reload");
    run.expect_metric("hawser_spare_backends{state=\"lent\"}", 2.0)
        .await;

    // The pool (two spares) ran dry: the fourth takes a reload, after which
    // every Service has its own backend and the pool holds twice as many.
    let text = service(&backends, "fourth", Route::Ingress);
    let status = apply(&run, || run.write_manifest("fourth.yaml", &text)).await;
    assert_eq!(
        status["agent"]["last_outcome"]["kind"], "reload",
        "{status:#}"
    );
    let pools = &status["controller"]["spare_backends"];
    assert_eq!(
        (
            pools["free"].as_u64(),
            pools["lent"].as_object().map(|l| l.len())
        ),
        (Some(4), Some(0)),
        "{pools:#}"
    );
    for name in names {
        expect_pod(&run, &format!("{name}.example.com"), &format!("{name}-a")).await;
    }

    // A Service that goes leaves its backend declared, empty: no reload.
    let workers = run.worker_pids().await;
    let status = apply(&run, || {
        std::fs::remove_file(run.manifests().join("second.yaml")).unwrap()
    })
    .await;
    assert_eq!(
        status["agent"]["last_outcome"]["kind"], "runtime",
        "{status:#}"
    );
    assert_eq!(run.get("second.example.com", "/").await.status, 404);
    assert_eq!(run.worker_pids().await, workers, "no new worker");
}
