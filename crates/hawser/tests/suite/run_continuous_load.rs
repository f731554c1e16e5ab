//! `hawser run` under continuous load: while 20 clients send requests on
//! fresh connections, more than 50 changes are applied one after the other
//! (endpoint churn at runtime, a host added and removed for a new Service by
//! a reload, a route moved by a map change), and not one request fails
//! (fixture `run_continuous_load/`).
//!
//! ```text
//!  20 clients ──GET stable|blue|green|flip──► HAProxy ──► echo pods
//!  test: ─endpoints─► applied ─add extra host─► reloaded ─flip─► applied ─remove extra─► reloaded ─► ...
//! ```

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Backends, Load, LoadTarget, Manifests, Run, RunOptions, pod};

const CLIENTS: usize = 20;
/// At least 50, a whole number of rounds of [`Change::round`].
const CHANGES: usize = 52;
/// The changes stop here even when fewer were applied (the test then fails),
/// so a hung apply cannot hold the suite. It bounds, it does not measure:
/// about 40 s is usual on two cores, a busy machine needs more.
const CHANGE_BUDGET: Duration = Duration::from_secs(90);

const STABLE_PODS: [&str; 3] = ["stable-a", "stable-b", "stable-c"];
/// Each differs from the one before it, the last from the first, and none
/// is empty: every step is an endpoint change, and stable always has a pod.
const ENDPOINT_SETS: [&[&str]; 6] = [
    &["stable-b", "stable-c"],
    &["stable-c"],
    &["stable-a", "stable-c"],
    &["stable-a", "stable-b", "stable-c"],
    &["stable-a"],
    &["stable-a", "stable-b"],
];
const EXTRA_HOST: &str = "extra.example.com";
const FLIP_HOST: &str = "flip.example.com";

/// One change to the manifests, and how it should be applied.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// Service stable's EndpointSlice lists these pods: runtime.
    Endpoints(&'static [&'static str]),
    /// An Ingress routes extra.example.com to this Service, which had no
    /// backend: a reload.
    AddExtraHost(&'static str),
    /// flip.example.com moves to this Service (whose backend exists): a map
    /// change at runtime.
    Flip(&'static str),
    /// The extra Ingress goes, and its backend with it: a reload.
    RemoveExtraHost,
}

impl Change {
    /// The `n`th round of four changes, one of each kind.
    fn round(n: usize) -> [Change; 4] {
        [
            Change::Endpoints(ENDPOINT_SETS[n % ENDPOINT_SETS.len()]),
            Change::AddExtraHost(["extra1", "extra2"][n % 2]),
            Change::Flip(["green", "blue"][n % 2]),
            Change::RemoveExtraHost,
        ]
    }

    /// The `last_outcome.kind` the change must be applied as.
    fn expected_kind(self) -> &'static str {
        match self {
            Change::Endpoints(_) | Change::Flip(_) => "runtime",
            Change::AddExtraHost(_) | Change::RemoveExtraHost => "reload",
        }
    }

    fn write(self, run: &Run, backends: &Backends) {
        match self {
            Change::Endpoints(pods) => {
                run.write_manifest("stable-endpoints.yaml", &stable_endpoints(backends, pods));
            }
            Change::AddExtraHost(service) => {
                run.write_manifest("extra.yaml", &ingress("extra", EXTRA_HOST, service));
            }
            Change::Flip(service) => {
                run.write_manifest("flip.yaml", &ingress("flip", FLIP_HOST, service));
            }
            Change::RemoveExtraHost => {
                std::fs::remove_file(run.manifests().join("extra.yaml"))
                    .expect("remove extra.yaml");
            }
        }
    }
}

/// Service stable's EndpointSlice with the given pods.
fn stable_endpoints(backends: &Backends, pods: &[&str]) -> String {
    let echo = |name: &str| {
        backends
            .echos()
            .iter()
            .find(|e| e.pod.name == name)
            .unwrap_or_else(|| panic!("no pod {name}"))
    };
    let port = echo(pods[0]).addr.port();
    let mut endpoints = String::new();
    for name in pods {
        endpoints.push_str(&format!(
            "  - addresses: [\"{}\"]\n    conditions: {{ ready: true }}\n    targetRef: {{ kind: Pod, name: {name} }}\n",
            echo(name).addr.ip()
        ));
    }
    format!(
        r#"apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: stable-1
  namespace: load
  labels: {{ kubernetes.io/service-name: stable }}
addressType: IPv4
ports: [{{ name: http, port: {port} }}]
endpoints:
{endpoints}"#
    )
}

/// Ingress `name` routing all of `host` to `service`.
fn ingress(name: &str, host: &str, service: &str) -> String {
    format!(
        r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{ name: {name}, namespace: load }}
spec:
  ingressClassName: hawser
  rules:
    - host: {host}
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: {{ service: {{ name: {service}, port: {{ name: http }} }} }}
"#
    )
}

fn counter(status: &Value, pointer: &str) -> u64 {
    status
        .pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("/status has no counter {pointer}: {status:#}"))
}

/// Writes `change` and waits until a generation newer than `before` is
/// applied and nothing newer is pending; returns `/status` then.
async fn apply(run: &Run, backends: &Backends, change: Change, before: u64) -> Value {
    change.write(run, backends);
    let status = run
        .wait_for_status(&format!("{change:?} applied"), |s| {
            s["applied_generation"].as_u64().unwrap_or(0) > before
                && s["desired_generation"] == s["applied_generation"]
                && s["ready"] == true
        })
        .await;
    let outcome = &status["agent"]["last_outcome"];
    assert_eq!(
        outcome["kind"],
        change.expected_kind(),
        "{change:?} should be applied by a {}: {status:#}",
        change.expected_kind()
    );
    status
}

/// One request shows the change took effect (the load checks the rest).
async fn expect_change_served(run: &Run, change: Change) {
    match change {
        Change::Endpoints(pods) => {
            let reply = run
                .expect_routed_to("stable.example.com", "/", "stable")
                .await;
            assert!(
                pods.contains(&reply.pod.as_str()),
                "stable.example.com answered by {} after its endpoints became {pods:?}",
                reply.pod
            );
        }
        Change::AddExtraHost(service) => {
            run.expect_routed_to(EXTRA_HOST, "/", service).await;
        }
        Change::Flip(service) => {
            run.expect_routed_to(FLIP_HOST, "/", service).await;
        }
        Change::RemoveExtraHost => {
            let response = run.get(EXTRA_HOST, "/").await;
            assert_eq!(
                response.status,
                404,
                "{EXTRA_HOST} still routed after its Ingress went: {:?}",
                response.text()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_fails_while_changes_reload_and_apply_at_runtime() {
    let mut pods: Vec<_> = STABLE_PODS
        .iter()
        .map(|name| pod("load", "stable", name))
        .collect();
    for service in ["blue", "green", "extra1", "extra2"] {
        pods.push(pod("load", service, &format!("{service}-a")));
    }
    let backends = Backends::start(&pods);
    let manifests = Manifests::from_fixture("run_continuous_load", &backends.vars());
    std::fs::write(
        manifests.path().join("stable-endpoints.yaml"),
        stable_endpoints(&backends, ENDPOINT_SETS[ENDPOINT_SETS.len() - 1]),
    )
    .expect("write stable-endpoints.yaml");
    std::fs::write(
        manifests.path().join("flip.yaml"),
        ingress("flip", FLIP_HOST, "blue"),
    )
    .expect("write flip.yaml");
    // No spare backends: a new Service takes a reload, which this test
    // runs under load (run_spare_backends.rs covers new Services on spares).
    let options = RunOptions {
        config_tail: "  spareBackends: 0\n".to_string(),
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    let first = run.wait_converged().await;
    run.expect_routed_to(FLIP_HOST, "/", "blue").await;

    let load = Load::start(
        run.http,
        CLIENTS,
        vec![
            LoadTarget::new("stable.example.com", &STABLE_PODS),
            LoadTarget::new("blue.example.com", &["blue-a"]),
            LoadTarget::new("green.example.com", &["green-a"]),
            LoadTarget::new(FLIP_HOST, &["blue-a", "green-a"]),
        ],
    );
    let started = Instant::now();
    let mut before = counter(&first, "/applied_generation");
    let mut applied = 0;
    let mut reload_changes = 0;
    let mut runtime_changes = 0;
    'changes: for round in 0..CHANGES / 4 {
        for change in Change::round(round) {
            if started.elapsed() > CHANGE_BUDGET {
                break 'changes;
            }
            let status = apply(&run, &backends, change, before).await;
            expect_change_served(&run, change).await;
            before = counter(&status, "/applied_generation");
            applied += 1;
            match change.expected_kind() {
                "reload" => reload_changes += 1,
                _ => runtime_changes += 1,
            }
        }
    }
    let changes_took = started.elapsed();
    let report = load.stop().await;
    let last = run.status().await;
    let reloads = counter(&last, "/reloads") - counter(&first, "/reloads");
    let runtime_ops = counter(&last, "/agent/runtime_ops") - counter(&first, "/agent/runtime_ops");
    println!(
        "continuous load: {applied} changes in {changes_took:.1?} ({reload_changes} by reload, \
         {runtime_changes} at runtime); /status: {reloads} reloads, {runtime_ops} runtime ops; \
         load: {report}"
    );

    assert_eq!(
        report.failures, 0,
        "requests failed while changes were applied: {report}"
    );
    assert!(
        report.requests >= 10 * CLIENTS as u64,
        "the load barely ran: {report}"
    );
    assert_eq!(
        applied, CHANGES,
        "only {applied} of {CHANGES} changes were applied within {CHANGE_BUDGET:?}"
    );
    assert!(
        reloads >= reload_changes,
        "{reload_changes} changes needed a reload, but /status counts {reloads} reloads"
    );
    assert!(
        runtime_ops >= runtime_changes,
        "{runtime_changes} changes were applied at runtime, but /status counts {runtime_ops} runtime ops"
    );
    assert_eq!(
        (
            counter(&last, "/agent/failed_reloads"),
            counter(&last, "/agent/rejected")
        ),
        (0, 0),
        "no reload may fail and no version be rejected: {last:#}"
    );
}
