//! `hawser run` killed at each named crash point of the apply pipeline
//! (`hawser-failpoint`, docs/agent.md "Crash points"), under load, then
//! started again on the same state directory (fixture `run_failpoints/`).
//!
//! ```text
//!  hawser run (a, b → v0; s.example.com with certificate "old") ── converged ── load starts
//!   ─► kill -9 (at rest) ─► write the change ─► hawser run, HAWSER_FAILPOINTS=<point>
//!   ─► dies of SIGKILL at <point> ─► what HAProxy serves, what the tree holds
//!   ─► hawser run, nothing armed ─► converged ─► load stops: zero failures
//! ```
//!
//! The point is armed for one start, whose first apply is the change: the
//! change is written while hawser is dead, so the restarted hawser passes
//! through the point on it and on nothing before it (at start, before any
//! apply, hawser stages and reloads nothing when `current` = `lkg`).
//!
//! Oracle, for every point:
//! - no request of the load fails, from before the first kill to after the
//!   recovery: HAProxy serves while hawser is dead, and neither the kill
//!   nor the recovery drops a connection;
//! - right after the kill HAProxy serves one whole version, the one the
//!   point implies: a and b, asked on one connection, answer from the same
//!   Service (the old one, or the new one after `agent.reloaded_before_lkg`);
//!   the tree shows the kill landed where the point says (a staging
//!   directory; `current` ahead of `lkg`; an open SSL transaction; a
//!   prepared, uncommitted map version);
//! - after the restart: exactly one HAProxy master (the first one, adopted
//!   every time), no staging directory, `current` = `lkg` = the applied
//!   generation, the newest version served, the live maps exactly the
//!   applied map files, no SSL transaction open.
//!
//! For the SSL point the certificate is one whole certificate throughout:
//! the old one (its transaction open, never committed) right after the
//! kill, the new one after the restart, each in a handshake that proves its
//! key matches. For the map point the map is the old one whole right after
//! the kill and the new one whole after the restart.

use crate::support;

use serde_json::Value;
use support::{
    Backends, CRASH_HOSTS as HOSTS, Load, LoadTarget, Manifests, Run, TestCertificate,
    TreeSnapshot, Vars, crash_routes, expect_admin_address_free, expect_certificate_of,
    expect_one_haproxy_master, expect_one_whole_version, expect_sane_tree, fixture_dir,
    haproxy_masters, open_ssl_transaction, pod,
};

/// The route map, its second copy, and the map naming the copy read.
const ROUTES_MAP: &str = "maps/routes.map";
const ROUTES_TWIN_MAP: &str = "maps/routes.twin.map";
const LIVE_TWINS_MAP: &str = "maps/live_twins.map";

/// The "version" Services; a and b route to one of them.
const VERSIONS: [&str; 3] = ["v0", "v1", "v2"];
/// Path types of a and b: both prefix routes.
const PREFIXES: [&str; 2] = ["Prefix", "Prefix"];
const TLS_HOST: &str = "s.example.com";
/// The certificate store of s.example.com's Secret.
const TLS_CERT: &str = "certs/fail_s-tls.pem";
const OLD_CN: &str = "s.example.com, old";
const NEW_CN: &str = "s.example.com, new";
const LOAD_CLIENTS: usize = 4;

/// What the test changes while hawser is dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// a and b from v0 to v1, and [`MORE_HOSTS`] hosts more to v1: more
    /// entries than the agent edits one by one, so one `replace map`, at
    /// runtime.
    Map,
    /// a and b from v0 to v1: two route entries, edited one by one in the
    /// copy of the route map requests do not read, at runtime.
    Routes,
    /// a and b from v0 to v2: v2's backend is added, a reload.
    Reload,
    /// s.example.com's certificate rotated: `set ssl cert`, `commit`.
    Certificate,
}

impl Change {
    /// The Service a and b route to after the change.
    fn routed_to(self) -> &'static str {
        match self {
            Change::Map | Change::Routes => VERSIONS[1],
            Change::Reload => VERSIONS[2],
            Change::Certificate => VERSIONS[0],
        }
    }
}

/// Hosts a [`Change::Map`] adds: more than the 64 entries the agent edits
/// one by one.
const MORE_HOSTS: usize = 70;

/// Ingress `more`: [`MORE_HOSTS`] hosts, `/` of each to `service`.
fn more_hosts(service: &str) -> String {
    let rules: String = (0..MORE_HOSTS)
        .map(|i| {
            format!(
                "    - host: more-{i}.example.com\n      http:\n        paths:\n\
                 \x20         - {{ path: /, pathType: Prefix, backend: {{ service: {{ name: {service}, port: {{ name: http }} }} }} }}\n"
            )
        })
        .collect();
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: more, namespace: fail }}\n\
         spec:\n  ingressClassName: hawser\n  rules:\n{rules}"
    )
}

fn secret_vars(certificate: &TestCertificate) -> Vars {
    Vars::from([
        ("S_TLS_CRT".to_string(), certificate.cert_yaml()),
        ("S_TLS_KEY".to_string(), certificate.key_yaml()),
    ])
}

/// The fixture's `secret.yaml` holding `certificate`.
fn secret_yaml(certificate: &TestCertificate) -> String {
    let mut text = std::fs::read_to_string(fixture_dir("run_failpoints").join("secret.yaml"))
        .expect("fixture secret.yaml");
    for (name, value) in secret_vars(certificate) {
        text = text.replace(&format!("${{{name}}}"), &value);
    }
    text
}

/// `hawser run` converged on a and b → v0 with the old certificate, its
/// echo pods and the HAProxy master it started. Dropped in field order.
struct Scene {
    run: Run,
    master: u32,
    old_generation: u64,
    _manifests: Manifests,
    _backends: Backends,
}

impl Scene {
    async fn start() -> Scene {
        let pods: Vec<_> = VERSIONS
            .iter()
            .map(|v| pod("fail", v, &format!("{v}-a")))
            .collect();
        let backends = Backends::start(&pods);
        let mut vars = backends.vars();
        vars.extend(secret_vars(&TestCertificate::with_cn(TLS_HOST, OLD_CN)));
        let manifests = Manifests::from_fixture("run_failpoints", &vars);
        std::fs::write(
            manifests.path().join("routes.yaml"),
            crash_routes("fail", VERSIONS[0], PREFIXES),
        )
        .expect("write routes.yaml");
        let run = Run::start(manifests.path()).await;
        let status = run.wait_converged().await;
        for host in HOSTS {
            run.expect_routed_to(host, "/", VERSIONS[0]).await;
        }
        expect_certificate_of(&run, TLS_HOST, OLD_CN, VERSIONS[0]).await;
        let masters = haproxy_masters(&run.state_dir());
        assert_eq!(masters.len(), 1, "one HAProxy master at the start");
        Scene {
            run,
            master: masters[0],
            old_generation: applied_generation(&status),
            _manifests: manifests,
            _backends: backends,
        }
    }
}

fn applied_generation(status: &Value) -> u64 {
    status["applied_generation"]
        .as_u64()
        .unwrap_or_else(|| panic!("/status has no applied_generation: {status:#}"))
}

/// Load on a, b (any version's pod may answer) and s.example.com.
fn start_load(run: &Run) -> Load {
    let pods: Vec<String> = VERSIONS.iter().map(|v| format!("{v}-a")).collect();
    let pods: Vec<&str> = pods.iter().map(String::as_str).collect();
    let mut targets: Vec<LoadTarget> = HOSTS
        .iter()
        .map(|host| LoadTarget::new(host, &pods))
        .collect();
    targets.push(LoadTarget::new(TLS_HOST, &["v0-a"]));
    Load::start(run.http, LOAD_CLIENTS, targets)
}

/// The whole test of one point, armed on a start whose first apply is
/// `change`: see the module's oracle.
async fn kill_at(point: &str, change: Change) {
    let mut scene = Scene::start().await;
    let run = &mut scene.run;
    let context = format!("killed at {point} ({change:?})");
    let load = start_load(run);

    // At rest: a kill here leaves `current` = `lkg`, nothing half done.
    run.kill9();
    expect_admin_address_free(run, &context).await;
    match change {
        Change::Map => run.write_manifest(
            "routes.yaml",
            &format!(
                "{}---\n{}",
                crash_routes("fail", change.routed_to(), PREFIXES),
                more_hosts(change.routed_to())
            ),
        ),
        Change::Reload | Change::Routes => run.write_manifest(
            "routes.yaml",
            &crash_routes("fail", change.routed_to(), PREFIXES),
        ),
        Change::Certificate => run.write_manifest(
            "secret.yaml",
            &secret_yaml(&TestCertificate::with_cn(TLS_HOST, NEW_CN)),
        ),
    }
    run.set_env(&[("HAWSER_FAILPOINTS", point)]);
    run.spawn();
    run.expect_killed_at(point).await;

    expect_landed(run, point, change, scene.old_generation, &context).await;

    expect_admin_address_free(run, &context).await;
    run.set_env(&[]);
    run.spawn();
    let status = run.wait_converged().await;
    for host in HOSTS {
        let reply = run.get(host, "/").await;
        assert_eq!(
            (reply.status, reply.echo().service.as_str()),
            (200, change.routed_to()),
            "{context}: {host} after recovery"
        );
    }
    let cn = if change == Change::Certificate {
        NEW_CN
    } else {
        OLD_CN
    };
    expect_certificate_of(run, TLS_HOST, cn, VERSIONS[0]).await;
    assert_eq!(
        open_ssl_transaction(run).await,
        None,
        "{context}: an SSL transaction is open after recovery"
    );
    run.expect_live_maps_applied().await;
    expect_one_haproxy_master(run, scene.master, &context).await;
    expect_sane_tree(run, &status, &context);

    let report = load.stop().await;
    println!("{context}: load {report}");
    assert!(report.requests > 0, "{context}: the load sent nothing");
    assert_eq!(
        report.failures, 0,
        "{context}: requests failed while hawser was killed and restarted: {report}"
    );
}

/// Right after the kill: HAProxy serves one whole version, the one `point`
/// implies, and the state shows the kill landed at `point`.
async fn expect_landed(run: &Run, point: &str, change: Change, old: u64, context: &str) {
    let tree = TreeSnapshot::read(&run.state_dir());
    let current = TreeSnapshot::generation(tree.current.as_ref());
    let lkg = TreeSnapshot::generation(tree.lkg.as_ref());
    assert_eq!(lkg, Some(old), "{context}: lkg moved: {tree:?}");
    let served = if point == "agent.reloaded_before_lkg" {
        change.routed_to()
    } else {
        VERSIONS[0]
    };
    expect_one_whole_version(run, &HOSTS, &[served], context).await;
    match point {
        "tree.mid_write" | "tree.synced_before_manifest" => {
            assert_eq!(current, Some(old), "{context}: current moved: {tree:?}");
            assert_eq!(tree.staging.len(), 1, "{context}: no staging: {tree:?}");
            let staging = run.state_dir().join("tree").join(&tree.staging[0]);
            assert!(
                !staging.join("MANIFEST").exists(),
                "{context}: the staging directory has a MANIFEST already"
            );
        }
        "agent.published_before_reload" | "agent.reloaded_before_lkg" => {
            assert!(
                current > Some(old) && tree.staging.is_empty(),
                "{context}: current should name the new, staged version: {tree:?}"
            );
        }
        "runtime.ssl_set_before_commit" => {
            assert_eq!(current, Some(old), "{context}: current moved: {tree:?}");
            assert_eq!(
                open_ssl_transaction(run).await.as_deref(),
                Some(TLS_CERT),
                "{context}: no SSL transaction open"
            );
            expect_certificate_of(run, TLS_HOST, OLD_CN, VERSIONS[0]).await;
        }
        "runtime.map_prepared_before_commit" => {
            assert_eq!(current, Some(old), "{context}: current moved: {tree:?}");
            let maps = run.runtime().show_maps().await.expect("show map");
            assert!(
                maps.iter().any(|m| m.next_ver > m.curr_ver),
                "{context}: no map has a prepared, uncommitted version: {maps:?}"
            );
            // `current` is the old version: the live maps are its maps, whole.
            run.expect_live_maps_applied().await;
        }
        "runtime.twin_edited_before_read" => {
            assert_eq!(current, Some(old), "{context}: current moved: {tree:?}");
            // The copy requests read is the old one, whole (checked above);
            // the other already holds the new routes.
            let runtime = run.runtime();
            let live = runtime.show_map(LIVE_TWINS_MAP).await.expect("show map");
            let read = live
                .iter()
                .find(|(map, _)| map == ROUTES_MAP)
                .map(|(_, copy)| copy.clone())
                .unwrap_or_else(|| panic!("{context}: {LIVE_TWINS_MAP} names no copy: {live:?}"));
            let unread = if read == ROUTES_MAP {
                ROUTES_TWIN_MAP
            } else {
                ROUTES_MAP
            };
            let entries = |map| async move {
                let mut entries = run.runtime().show_map(map).await.expect("show map");
                entries.sort();
                entries
            };
            assert_ne!(
                entries(&read).await,
                entries(unread).await,
                "{context}: the copy not read ({unread}) was not edited"
            );
        }
        other => panic!("no landing check for the point {other}"),
    }
}

/// A torn file in a staging directory: the staging is removed at the next
/// start, and the version written again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_mid_file_write() {
    kill_at("tree.mid_write", Change::Reload).await;
}

/// Every file written and synced, no PLAN or MANIFEST: the staging is
/// removed at the next start, never taken for a version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_after_fsync_before_the_manifest() {
    kill_at("tree.synced_before_manifest", Change::Reload).await;
}

/// `current` names the new version, HAProxy runs the old one: the next
/// start adopts HAProxy and reloads `current`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_after_current_moves_before_the_reload() {
    kill_at("agent.published_before_reload", Change::Reload).await;
}

/// HAProxy runs the new version, `lkg` still names the old one: the next
/// start reloads `current` again and moves `lkg` once verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_after_the_reload_before_lkg_moves() {
    kill_at("agent.reloaded_before_lkg", Change::Reload).await;
}

/// An SSL transaction open in HAProxy: the next start aborts it, then
/// rotates the certificate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_between_set_ssl_cert_and_commit() {
    kill_at("runtime.ssl_set_before_commit", Change::Certificate).await;
}

/// Route entries edited in the copy of the route map no request reads,
/// before it is named the one read: requests keep the old copy, whole, and
/// the next start puts the edited copy back in step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_between_the_edits_of_a_route_map_copy_and_reading_it() {
    kill_at("runtime.twin_edited_before_read", Change::Routes).await;
}

/// A prepared map version never committed: lookups keep the old map, and
/// the next start replaces it whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_between_prepare_map_and_commit() {
    kill_at("runtime.map_prepared_before_commit", Change::Map).await;
}
