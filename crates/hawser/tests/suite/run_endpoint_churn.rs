//! `hawser run`: endpoint churn is applied through the runtime API, with no
//! reload (the HAProxy worker stays the same process), and traffic follows
//! the endpoints (fixture `run_endpoint_churn/`).

use crate::support;

use std::collections::BTreeSet;

use support::{Backends, Manifests, Run, RunOptions, pod};

/// The EndpointSlice of Service churn/churn with the given pods.
fn slice(backends: &Backends, pods: &[&str]) -> String {
    let port = backends.echos()[0].addr.port();
    let mut endpoints = String::new();
    for name in pods {
        let echo = backends
            .echos()
            .iter()
            .find(|e| e.pod.name == *name)
            .expect("a started pod");
        endpoints.push_str(&format!(
            "  - addresses: [\"{}\"]\n    conditions: {{ ready: true }}\n    targetRef: {{ kind: Pod, name: {name} }}\n",
            echo.addr.ip()
        ));
    }
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: churn-1\n  namespace: churn\n  \
         labels: {{ kubernetes.io/service-name: churn }}\naddressType: IPv4\n\
         ports: [{{ name: http, port: {port} }}]\nendpoints:\n{endpoints}"
    )
}

/// Sends requests until every pod in `pods` answered and no other did.
async fn expect_pods(run: &Run, pods: &[&str]) {
    let wanted: BTreeSet<String> = pods.iter().map(|p| p.to_string()).collect();
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    let mut seen = BTreeSet::new();
    loop {
        let response = run.get("churn.example.com", "/").await;
        if response.status == 200 {
            let pod = response.echo().pod;
            if !wanted.contains(&pod) {
                // An old endpoint may still answer until the change is applied.
                seen.clear();
            } else {
                seen.insert(pod);
            }
        }
        if seen == wanted {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "requests never reached exactly {wanted:?} (last seen {seen:?})\n{}",
            run.output()
        );
    }
}

/// Service churn/churn with these pods, its EndpointSlice listing the
/// first two, served with `options` until both answer.
async fn serve(names: &[&str], options: RunOptions) -> (Backends, Manifests, Run) {
    let pods: Vec<_> = names.iter().map(|n| pod("churn", "churn", n)).collect();
    let backends = Backends::start(&pods);
    let manifests = Manifests::from_fixture("run_endpoint_churn", &backends.vars());
    std::fs::write(
        manifests.path().join("slice.yaml"),
        slice(&backends, &names[..2]),
    )
    .expect("write slice");
    let run = Run::start_with(manifests.path(), options).await;
    run.wait_converged().await;
    expect_pods(&run, &names[..2]).await;
    (backends, manifests, run)
}

#[tokio::test]
async fn endpoint_churn_applies_without_reload_and_traffic_follows() {
    let names = ["churn-a", "churn-b", "churn-c", "churn-d"];
    let (backends, _manifests, run) = serve(&names, RunOptions::default()).await;
    let workers = run.worker_pids().await;
    let reloads = run.status().await["reloads"].clone();

    let steps: [&[&str]; 6] = [
        &["churn-a", "churn-b", "churn-c"],
        &["churn-c"],
        &["churn-c", "churn-d"],
        &["churn-a", "churn-d"],
        &["churn-b", "churn-c", "churn-d"],
        &["churn-a"],
    ];
    for step in steps {
        // Read before the write: hawser may have applied it before a read
        // after it.
        let before = run.status().await["applied_generation"]
            .as_u64()
            .unwrap_or(0);
        run.write_manifest("slice.yaml", &slice(&backends, step));
        run.wait_for_status("the new endpoints applied", |s| {
            s["applied_generation"].as_u64().unwrap_or(0) > before
                && s["desired_generation"] == s["applied_generation"]
        })
        .await;
        expect_pods(&run, step).await;
        let status = run.status().await;
        assert_eq!(
            status["agent"]["last_outcome"]["kind"], "runtime",
            "endpoint change {step:?} should apply at runtime: {status:#}"
        );
    }
    assert_eq!(
        run.worker_pids().await,
        workers,
        "the HAProxy worker must not change"
    );
    assert_eq!(
        run.status().await["reloads"],
        reloads,
        "no reload for endpoint churn"
    );
}

/// A reload waiting for its slot (`--min-reload-interval-ms`, here far
/// longer than the test) does not hold back endpoint churn: the servers of
/// backends both versions declare are changed at runtime meanwhile.
///
/// Oracle: the reload cannot happen before the test ends, so the new
/// endpoints can only be served by the runtime API; the worker PIDs and the
/// reload count prove no reload happened.
#[tokio::test]
async fn endpoint_churn_does_not_wait_behind_a_paced_reload() {
    let options = RunOptions {
        args: vec!["--min-reload-interval-ms".into(), "600000".into()],
        ..RunOptions::default()
    };
    // Its first version is a reload: the next may come ten minutes later.
    let (backends, _manifests, run) = serve(&["churn-a", "churn-b", "churn-c"], options).await;
    let workers = run.worker_pids().await;
    let applied = run.status().await["applied_generation"].clone();

    // A default backend is named in haproxy.cfg itself: a reload, paced.
    run.write_manifest(
        "other.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: { name: other, namespace: churn }\n\
         spec:\n  ingressClassName: hawser\n  defaultBackend: { service: { name: churn, port: { name: http } } }\n",
    );
    run.wait_for_status("the reload rendered", |s| {
        s["desired_generation"].as_u64() > applied.as_u64()
    })
    .await;
    run.write_manifest("slice.yaml", &slice(&backends, &["churn-c"]));
    expect_pods(&run, &["churn-c"]).await;

    let status = run.status().await;
    assert_eq!(
        status["applied_generation"], applied,
        "the reload still waits: {status:#}"
    );
    assert_eq!(status["reloads"], 1, "{status:#}");
    assert_eq!(
        run.worker_pids().await,
        workers,
        "the HAProxy worker must not change"
    );
}
