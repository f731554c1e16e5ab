//! Runtime first: feature values of existing Ingresses change through the
//! runtime API, with no reload (the same HAProxy worker serves before and
//! after): an allow-list edited, a redirect target changed, and features
//! given to an Ingress that had none (fixture `run_ingress_features/`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

mod support;

use support::{Backends, Manifests, Run, pod};

const EDITED: &str = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: gate
  namespace: features
  annotations:
    hawser.dev/allowlist-source-range: "10.0.0.0/8, 127.0.0.0/8"
spec:
  rules:
    - host: gate.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: moved
  namespace: features
  annotations:
    hawser.dev/permanent-redirect: "https://second.example.com/"
spec:
  rules:
    - host: moved.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: plain
  namespace: features
  annotations:
    hawser.dev/temporal-redirect: "https://elsewhere.example.com/"
spec:
  rules:
    - host: plain.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
"#;

#[tokio::test]
async fn feature_values_change_without_a_reload() {
    let backends = Backends::start(&[pod("features", "app", "app-0")]);
    let manifests = Manifests::from_fixture("run_ingress_features", &backends.vars());
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;

    assert_eq!(run.get("gate.example.com", "/").await.status, 403);
    let moved = run.get("moved.example.com", "/").await;
    assert_eq!(moved.status, 301);
    assert_eq!(moved.header("location"), Some("https://first.example.com/"));
    run.expect_routed_to("plain.example.com", "/", "app").await;
    let workers = run.worker_pids().await;

    let before = run.desired_generation().await;
    run.write_manifest("ingresses.yaml", EDITED);
    run.expect_outcome_after(before, "runtime").await;

    run.expect_routed_to("gate.example.com", "/", "app").await;
    let moved = run.get("moved.example.com", "/").await;
    assert_eq!(
        moved.header("location"),
        Some("https://second.example.com/")
    );
    let plain = run.get("plain.example.com", "/").await;
    assert_eq!(plain.status, 302);
    assert_eq!(
        plain.header("location"),
        Some("https://elsewhere.example.com/")
    );
    assert_eq!(run.worker_pids().await, workers, "the same worker serves");
}
