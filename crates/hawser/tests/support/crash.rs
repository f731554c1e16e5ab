//! Oracles for a `hawser run` killed in the middle of an apply, shared by
//! the crash tests (random kills in `run_crash_recovery`, named crash points
//! in `run_failpoints`).
//!
//! ```text
//!  kill ──► expect_one_whole_version (HAProxy serves, old or new, never a mix)
//!       ──► expect_admin_address_free ──► hawser run again
//!       ──► expect_one_haproxy_master (the same one) ──► expect_sane_tree (current = lkg = applied)
//! ```

use std::time::{Duration, Instant};

use serde_json::Value;

use super::keep_alive::get_on_one_connection;
use super::{Run, TIMEOUT, TreeSnapshot, haproxy_masters};

/// With hawser dead, HAProxy still answers, and `hosts`, asked on one
/// connection (one worker, one configuration), name the same Service, one
/// of `allowed`. Three connections, each retried while a stopping worker
/// closes it between the requests. Returns the Services seen.
pub async fn expect_one_whole_version(
    run: &Run,
    hosts: &[&str],
    allowed: &[&str],
    context: &str,
) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    while seen.len() < 3 {
        let responses = match get_on_one_connection(run.http, hosts, "/").await {
            Ok(Some(responses)) => responses,
            Ok(None) => {
                assert!(
                    Instant::now() < deadline,
                    "{context}: HAProxy kept closing connections between two requests"
                );
                continue;
            }
            Err(e) => panic!("{context}: HAProxy did not answer after hawser was killed: {e}"),
        };
        let services: Vec<String> = responses
            .iter()
            .zip(hosts)
            .map(|(response, host)| {
                assert_eq!(
                    response.status,
                    200,
                    "{context}: {host} answered {} {:?} after hawser was killed",
                    response.status,
                    response.text()
                );
                response.echo().service
            })
            .collect();
        assert!(
            services.iter().all(|s| *s == services[0]),
            "{context}: a mix of versions is live: {hosts:?} answered from {services:?}"
        );
        assert!(
            allowed.contains(&services[0].as_str()),
            "{context}: {hosts:?} answered from {}, none of the versions {allowed:?}",
            services[0]
        );
        seen.push(services[0].clone());
    }
    seen
}

/// The admin address the killed hawser listened on is free again: nothing
/// it left running (HAProxy included) holds it, and the next start can
/// listen there.
pub async fn expect_admin_address_free(run: &Run, context: &str) {
    let deadline = Instant::now() + TIMEOUT;
    while let Err(e) = std::net::TcpListener::bind(run.admin) {
        assert!(
            Instant::now() < deadline,
            "{context}: the admin address {} stays taken after hawser was killed: {e}",
            run.admin
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One HAProxy master runs on the state directory: the one hawser adopted
/// (`expected`), the one its pid file and master socket name.
pub async fn expect_one_haproxy_master(run: &Run, expected: u32, context: &str) {
    let masters = haproxy_masters(&run.state_dir());
    assert_eq!(
        masters,
        vec![expected],
        "{context}: the HAProxy masters on this state directory should be just the adopted one"
    );
    assert_eq!(
        run.haproxy_master_pid(),
        Some(expected),
        "{context}: the pid file names another master"
    );
    let table = run
        .master()
        .show_proc()
        .await
        .unwrap_or_else(|e| panic!("{context}: show proc on the master socket: {e}"));
    assert_eq!(
        table.master.pid, expected,
        "{context}: the master socket belongs to another master"
    );
}

/// `current` and `lkg` name the applied version (in `status`), which
/// exists; no staging directory is left.
pub fn expect_sane_tree(run: &Run, status: &Value, context: &str) -> TreeSnapshot {
    let tree = TreeSnapshot::read(&run.state_dir());
    let applied = status["applied_generation"]
        .as_u64()
        .unwrap_or_else(|| panic!("{context}: /status has no applied_generation: {status:#}"));
    for (name, pointer) in [("current", &tree.current), ("lkg", &tree.lkg)] {
        let target = pointer
            .as_ref()
            .unwrap_or_else(|| panic!("{context}: tree/{name} is not a symlink: {tree:?}"));
        assert!(
            tree.versions.contains(target),
            "{context}: tree/{name} points at {target}, which is not a version directory: {tree:?}"
        );
        assert_eq!(
            TreeSnapshot::generation(Some(target)),
            Some(applied),
            "{context}: tree/{name} should name the applied generation {applied}: {tree:?}"
        );
    }
    assert!(
        tree.staging.is_empty(),
        "{context}: staging directories left after recovery: {tree:?}"
    );
    tree
}

/// Asserts HTTPS with SNI `host` is served the certificate with subject `cn`
/// (one whole certificate: the handshake proves its key matches) and
/// reaches the Service `site`.
pub async fn expect_certificate(run: &Run, host: &str, cn: &str) {
    expect_certificate_of(run, host, cn, "site").await;
}

/// [`expect_certificate`], reaching `service`.
pub async fn expect_certificate_of(run: &Run, host: &str, cn: &str, service: &str) {
    let response = run.get_tls(Some(host), host, "/").await;
    assert_eq!(
        response.tls().subject_cn.as_deref(),
        Some(cn),
        "SNI {host}: {:?}",
        response.tls()
    );
    assert_eq!(response.status, 200, "{:?}", response.text());
    assert_eq!(response.echo().service, service);
}

/// The certificate of HAProxy's open SSL transaction, if any.
pub async fn open_ssl_transaction(run: &Run) -> Option<String> {
    run.runtime()
        .show_ssl_certs()
        .await
        .expect("show ssl cert")
        .transaction
}

/// The hosts the crash tests route, each to one "version" Service.
pub const CRASH_HOSTS: [&str; 2] = ["a.example.com", "b.example.com"];

/// Ingress `routes` of `namespace`: `/` of each of [`CRASH_HOSTS`], with
/// the path type beside it, to `service` (port `http`).
pub fn crash_routes(namespace: &str, service: &str, path_types: [&str; 2]) -> String {
    let mut rules = String::new();
    for (host, path_type) in CRASH_HOSTS.iter().zip(path_types) {
        rules.push_str(&format!(
            r#"    - host: {host}
      http:
        paths:
          - path: /
            pathType: {path_type}
            backend: {{ service: {{ name: {service}, port: {{ name: http }} }} }}
"#
        ));
    }
    format!(
        r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{ name: routes, namespace: {namespace} }}
spec:
  ingressClassName: hawser
  rules:
{rules}"#
    )
}
