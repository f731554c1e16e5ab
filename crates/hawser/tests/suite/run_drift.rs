//! `hawser run --drift-interval-secs 1`: what someone changes by hand
//! through HAProxy's runtime API (a server's state, address or weight, a
//! server deleted or added, a map entry, a certificate) is put back to the
//! applied version within the drift interval, without a reload, and counted
//! in `/status`; a check after every reload puts back what the reload
//! carried over (fixture `run_drift/`; DESIGN.md §4, invariant 7).

use crate::support;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use hawser_haproxy::{AdminState, ServerState};
use support::{Backends, Manifests, Run, RunOptions, TestCertificate, pod};

const HOST: &str = "drift.example.com";
const BACKEND: &str = "be_drift_web_http";
const CERT: &str = "certs/drift_web-tls.pem";

/// Drift checked every second.
const EVERY_SECOND: &[&str] = &["--drift-interval-secs", "1"];

/// `hawser run` on the fixture with these extra arguments, converged.
async fn start(args: &[&str]) -> (Backends, Manifests, Run) {
    let backends = Backends::start(&[pod("drift", "web", "web-a"), pod("drift", "web", "web-b")]);
    let cert = TestCertificate::self_signed(HOST);
    let mut vars = backends.vars();
    vars.insert("WEB_TLS_CRT".into(), cert.cert_yaml());
    vars.insert("WEB_TLS_KEY".into(), cert.key_yaml());
    let manifests = Manifests::from_fixture("run_drift", &vars);
    let run = Run::start_with(
        manifests.path(),
        RunOptions {
            args: args.iter().map(|a| a.to_string()).collect(),
            ..RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;
    (backends, manifests, run)
}

/// The name hawser gives the server of an echo pod (`ep_<address>_<port>`).
fn server_of(backends: &Backends, pod: &str) -> String {
    let echo = backends
        .echos()
        .iter()
        .find(|e| e.pod.name == pod)
        .expect("a started pod");
    format!("ep_{}_{}", echo.addr.ip(), echo.addr.port())
}

/// The drift repairs counted so far.
async fn drift_repairs(run: &Run) -> u64 {
    run.status().await["agent"]["drift_repairs"]
        .as_u64()
        .expect("agent.drift_repairs")
}

/// Polls `show servers state` of the backend until `restored` holds for
/// every server.
async fn expect_servers_restored(run: &Run, restored: impl Fn(&ServerState) -> bool) {
    let deadline = Instant::now() + support::TIMEOUT;
    loop {
        let live = run
            .runtime()
            .show_servers_state(Some(BACKEND))
            .await
            .expect("show servers state");
        if live.len() == 2 && live.iter().all(&restored) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the servers of {BACKEND} were never put back: {live:#?}\n{}",
            run.output()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn servers_changed_by_hand_are_put_back() {
    let (backends, _manifests, run) = start(EVERY_SECOND).await;
    run.expect_pods_reached(HOST, "/exact", &["web-a", "web-b"])
        .await;
    let (a, b) = (server_of(&backends, "web-a"), server_of(&backends, "web-b"));
    let b_addr = backends.echos()[1].addr;
    let workers = run.worker_pids().await;
    let reloads = run.status().await["reloads"].clone();
    let repairs = drift_repairs(&run).await;

    let api = run.runtime();
    api.set_server_state(BACKEND, &a, AdminState::Maint)
        .await
        .expect("put web-a in maintenance");
    api.set_server_weight(BACKEND, &a, 0)
        .await
        .expect("weigh web-a 0");
    api.set_server_addr(BACKEND, &b, IpAddr::V4(Ipv4Addr::LOCALHOST), 1)
        .await
        .expect("readdress web-b");

    expect_servers_restored(&run, |s| {
        let addr_ok = if s.name == b {
            s.addr == b_addr.ip().to_string() && s.port == b_addr.port()
        } else {
            true
        };
        !s.in_maintenance() && !s.draining() && s.weight == 1 && addr_ok
    })
    .await;
    run.wait_for_status("three drift repairs counted", |s| {
        s["agent"]["drift_repairs"].as_u64().unwrap_or(0) >= repairs + 3
    })
    .await;
    // Traffic reaches both pods again.
    run.expect_pods_reached(HOST, "/exact", &["web-a", "web-b"])
        .await;

    // A server deleted by hand comes back; one added by hand goes.
    let repairs = drift_repairs(&run).await;
    api.set_server_state(BACKEND, &b, AdminState::Maint)
        .await
        .expect("put web-b in maintenance");
    api.del_server(BACKEND, &b).await.expect("delete web-b");
    api.add_server(BACKEND, "by-hand", IpAddr::V4(Ipv4Addr::LOCALHOST), 1, &[])
        .await
        .expect("add a server by hand");
    expect_servers_restored(&run, |s| {
        [&a, &b].contains(&&s.name) && !s.in_maintenance() && s.weight == 1
    })
    .await;
    run.wait_for_status("two more drift repairs counted", |s| {
        s["agent"]["drift_repairs"].as_u64().unwrap_or(0) >= repairs + 2
    })
    .await;
    run.expect_pods_reached(HOST, "/exact", &["web-a", "web-b"])
        .await;
    // All on the same worker, with no reload.
    assert_eq!(run.worker_pids().await, workers);
    assert_eq!(
        run.status().await["reloads"],
        reloads,
        "repairs never reload"
    );
}

#[tokio::test]
async fn map_entries_changed_by_hand_are_put_back() {
    let (_backends, _manifests, run) = start(EVERY_SECOND).await;
    run.expect_routed_to(HOST, "/exact", "web").await;
    run.expect_routed_to(HOST, "/app/page", "web").await;
    let reloads = run.status().await["reloads"].clone();
    let repairs = drift_repairs(&run).await;

    // In every map with entries: the first entry deleted, the others
    // pointed elsewhere.
    let api = run.runtime();
    let mut maps = run.applied_maps();
    maps.retain(|(_, entries)| !entries.is_empty());
    assert!(
        maps.iter().any(|(_, entries)| entries.len() > 1),
        "{maps:?}"
    );
    for (map, entries) in &maps {
        let ((first, _), rest) = entries.split_first().expect("an entry");
        api.del_map(map, first).await.expect("delete a route");
        for (key, _) in rest {
            api.set_map(map, key, "hawser_not_found")
                .await
                .expect("point a route elsewhere");
        }
    }

    run.expect_live_maps_applied().await;
    let changed = maps.len() as u64;
    run.wait_for_status("every map's repair counted", |s| {
        s["agent"]["drift_repairs"].as_u64().unwrap_or(0) >= repairs + changed
    })
    .await;
    run.expect_routed_to(HOST, "/exact", "web").await;
    run.expect_routed_to(HOST, "/app", "web").await;
    run.expect_routed_to(HOST, "/app/page", "web").await;
    assert_eq!(
        run.status().await["reloads"],
        reloads,
        "repairs never reload"
    );
}

#[tokio::test]
async fn certificates_changed_by_hand_are_put_back() {
    let (_backends, _manifests, run) = start(EVERY_SECOND).await;
    let served = |response: support::Response| response.tls().subject_cn.clone();
    let response = run.get_tls(Some(HOST), HOST, "/exact").await;
    assert_eq!(served(response).as_deref(), Some(HOST));
    let repairs = drift_repairs(&run).await;

    let by_hand = TestCertificate::self_signed("by-hand.example.com");
    run.runtime()
        .update_ssl_cert(CERT, &format!("{}{}", by_hand.cert_pem, by_hand.key_pem))
        .await
        .expect("replace the certificate by hand");

    let deadline = Instant::now() + support::TIMEOUT;
    loop {
        let cn = served(run.get_tls(Some(HOST), HOST, "/exact").await);
        if cn.as_deref() == Some(HOST) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{CERT} was never put back: SNI {HOST} still gets {cn:?}\n{}",
            run.output()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    run.wait_for_status("the certificate's repair counted", |s| {
        s["agent"]["drift_repairs"].as_u64().unwrap_or(0) > repairs
    })
    .await;
}

/// The server-state file carries a hand-made maintenance over a reload, so
/// the check after the reload is what puts it back, long before the timer.
#[tokio::test]
async fn drift_is_repaired_after_every_reload() {
    // The default drift interval (30 s) is longer than the suite's timeout:
    // only a check after the reload can put the server back in time.
    let (backends, _manifests, run) = start(&[]).await;
    let a = server_of(&backends, "web-a");
    run.runtime()
        .set_server_state(BACKEND, &a, AdminState::Maint)
        .await
        .expect("put web-a in maintenance");

    // A new backend: applied by a reload.
    let before = run.desired_generation().await;
    run.write_manifest(
        "other.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: { name: other, namespace: drift }\n\
         spec:\n  ingressClassName: hawser\n  defaultBackend: { service: { name: other, port: { number: 80 } } }\n",
    );
    run.expect_outcome_after(before, "reload").await;
    expect_servers_restored(&run, |s| !s.in_maintenance()).await;
    run.wait_for_status("the repair counted", |s| {
        s["agent"]["drift_repairs"].as_u64().unwrap_or(0) >= 1
    })
    .await;
    run.expect_pods_reached(HOST, "/exact", &["web-a", "web-b"])
        .await;
}

/// A route added at runtime as one entry (`add map`: one Exact path) goes
/// after the others: HAProxy lists it last, not where the map file has it
/// (its key is the longest, so the file has it first). The drift check
/// must not take that for drift.
#[tokio::test]
async fn a_route_added_by_entry_is_not_drift() {
    let (_backends, _manifests, run) = start(EVERY_SECOND).await;
    let repairs = drift_repairs(&run).await;
    let before = run.desired_generation().await;
    run.write_manifest(
        "more.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: { name: more, namespace: drift }\n\
         spec:\n  ingressClassName: hawser\n  rules:\n    - host: a-host-longer-than-every-other-route.example.com\n      http:\n        paths:\n\
         \x20         - path: /\n            pathType: Exact\n            backend: { service: { name: web, port: { name: http } } }\n",
    );
    let status = run.expect_outcome_after(before, "runtime").await;
    let summary = status["agent"]["last_outcome"]["summary"]
        .as_str()
        .unwrap_or_default();
    assert!(
        summary.contains("edit map maps/routes.map and its twin: add "),
        "{summary}"
    );
    run.expect_routed_to(
        "a-host-longer-than-every-other-route.example.com",
        "/",
        "web",
    )
    .await;
    // Three drift checks later, nothing was repaired.
    tokio::time::sleep(std::time::Duration::from_millis(3_500)).await;
    assert_eq!(
        drift_repairs(&run).await,
        repairs,
        "{:#}",
        run.status().await
    );
}
