//! `hawser run`: HAProxy crashing under traffic — its worker killed
//! (SIGKILL), its worker crashing (SIGSEGV), its master killed (SIGKILL) —
//! comes back on the version hawser applied, with what it had changed at
//! runtime since the last reload (a server added, a route added, a
//! certificate rotated), and does not crash again (fixture
//! `run_haproxy_crashes/`).
//!
//! ```text
//!  serve ─► runtime: + pod site-b, + host c.example.com, a-tls rotated ─► load on
//!        ─► crash ─► the agent restarts HAProxy on `current` ─► load: no failure from then on
//! ```
//!
//! Oracle: every runtime change answers after the crash (the rotated
//! certificate's subject, pod site-b, the new host); `haproxy_restarts` is
//! 1 and stays 1, with the same master, while load runs on without a failure
//! once HAProxy is back. HAProxy's master exits when its worker dies (it
//! cannot tell a crash from a bug), so each crash is one restart.

use crate::support;

use std::time::Duration;

use support::{
    Backends, Load, LoadTarget, Manifests, Run, TestCertificate, Vars, fixture_dir, pod, signal,
};

const A_HOST: &str = "a.example.com";

/// What the test does to HAProxy.
#[derive(Debug, Clone, Copy)]
enum Crash {
    /// `kill -KILL <worker>`.
    WorkerKilled,
    /// `kill -SEGV <worker>`: what a crash in HAProxy looks like.
    WorkerSegfault,
    /// `kill -KILL <master>`.
    MasterKilled,
}

#[tokio::test]
async fn a_killed_worker_comes_back_with_its_runtime_changes() {
    crash_and_recover(Crash::WorkerKilled).await;
}

#[tokio::test]
async fn a_crashed_worker_comes_back_with_its_runtime_changes() {
    crash_and_recover(Crash::WorkerSegfault).await;
}

#[tokio::test]
async fn a_killed_master_comes_back_with_its_runtime_changes() {
    crash_and_recover(Crash::MasterKilled).await;
}

async fn crash_and_recover(crash: Crash) {
    let first = certificate("first");
    let backends = Backends::start(&[
        pod("crash", "site", "site-a"),
        pod("crash", "site", "site-b"),
    ]);
    let mut vars = backends.vars();
    vars.extend(secret_vars(&first));
    let manifests = Manifests::from_fixture("run_haproxy_crashes", &vars);
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;
    expect_certificate(&run, "first").await;

    // Three changes made at runtime, no reload between them and the crash.
    let rotated = certificate("rotated");
    let site_b = backends.pod("site-b").addr.ip();
    let endpoints = std::fs::read_to_string(run.manifests().join("endpoints.yaml"))
        .expect("endpoints.yaml")
        + &format!(
            "  - addresses: [\"{site_b}\"]\n    conditions: {{ ready: true }}\n    targetRef: {{ kind: Pod, name: site-b }}\n"
        );
    for (file, text) in [
        ("endpoints.yaml", endpoints),
        ("more.yaml", MORE.to_string()),
        ("secret.yaml", secret_yaml(&rotated)),
    ] {
        let before = run.desired_generation().await;
        run.write_manifest(file, &text);
        let status = run.expect_outcome_after(before, "runtime").await;
        assert_eq!(status["agent"]["reloads"], 1, "{file}: {status:#}");
    }
    expect_runtime_changes_served(&run).await;
    let workers = run.worker_pids().await;
    let master = master_pid(&run).await;

    let load = Load::start(run.http, 4, vec![target()]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    match crash {
        Crash::WorkerKilled => signal("KILL", workers[0]),
        Crash::WorkerSegfault => signal("SEGV", workers[0]),
        Crash::MasterKilled => signal("KILL", master),
    }
    // While HAProxy is down the agent says so: not ready.
    run.wait_for_status("the agent restarting HAProxy", |s| {
        s["agent"]["haproxy_restarts"] == 1
    })
    .await;
    let status = run
        .wait_for_status("HAProxy restarted", |s| {
            s["agent"]["phase"] == "serving" && s["ready"] == true
        })
        .await;
    let during = load.stop().await;
    let restarted = master_pid(&run).await;
    assert_ne!(restarted, master, "{crash:?}: a new master\n{status:#}");
    assert_ne!(run.worker_pids().await, workers, "{crash:?}: a new worker");

    expect_runtime_changes_served(&run).await;
    // Back for good: load from here on meets no failure, and nothing
    // restarts again.
    let load = Load::start(run.http, 4, vec![target()]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = load.stop().await;
    assert_eq!(
        after.failures, 0,
        "{crash:?}: after the restart: {after:?}\n(during the crash: {during:?})"
    );
    assert!(after.requests > 0, "{after:?}");
    let status = run.status().await;
    assert_eq!(
        status["agent"]["haproxy_restarts"], 1,
        "{crash:?}: no second restart\n{status:#}"
    );
    assert_eq!(master_pid(&run).await, restarted, "{crash:?}");
    run.expect_metric("hawser_haproxy_restarts_total", 1.0)
        .await;
}

/// A second host on the same Service: a route map entry.
const MORE: &str = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: more, namespace: crash }
spec:
  ingressClassName: hawser
  rules:
    - host: c.example.com
      http:
        paths:
          - { path: /, pathType: Prefix, backend: { service: { name: site, port: { name: http } } } }
"#;

fn target() -> LoadTarget {
    LoadTarget::new("c.example.com", &["site-a", "site-b"])
}

async fn expect_runtime_changes_served(run: &Run) {
    expect_certificate(run, "rotated").await;
    run.expect_pods_reached("c.example.com", "/", &["site-a", "site-b"])
        .await;
}

/// A self-signed certificate for a.example.com whose subject CN is `cn`.
fn certificate(cn: &str) -> TestCertificate {
    TestCertificate::with_cn(A_HOST, cn)
}

fn secret_vars(cert: &TestCertificate) -> Vars {
    let mut vars = Vars::new();
    vars.insert("A_TLS_CRT".to_string(), cert.cert_yaml());
    vars.insert("A_TLS_KEY".to_string(), cert.key_yaml());
    vars
}

fn secret_yaml(cert: &TestCertificate) -> String {
    let mut text = std::fs::read_to_string(fixture_dir("run_haproxy_crashes").join("secret.yaml"))
        .expect("fixture secret.yaml");
    for (name, value) in secret_vars(cert) {
        text = text.replace(&format!("${{{name}}}"), &value);
    }
    text
}

/// Asserts HTTPS for a.example.com is served the certificate with subject `cn`.
async fn expect_certificate(run: &Run, cn: &str) {
    let response = run.get_tls(Some(A_HOST), A_HOST, "/").await;
    assert_eq!(
        response.tls().subject_cn.as_deref(),
        Some(cn),
        "{:?}\n{}",
        response.tls(),
        run.output()
    );
    assert_eq!(response.status, 200, "{:?}", response.text());
}

/// The master's pid, as it says itself.
async fn master_pid(run: &Run) -> u32 {
    run.master()
        .show_proc()
        .await
        .expect("show proc on the master CLI")
        .master
        .pid
}
