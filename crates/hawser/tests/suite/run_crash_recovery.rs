//! `hawser run` killed with SIGKILL in the middle of applies, 20 times: the
//! HAProxy it leaves running serves one whole version (the old or the new,
//! never a mix), and the next `hawser run` adopts it, recovers the tree and
//! serves the newest version with exactly one HAProxy master (fixture
//! `run_crash_recovery/`).
//!
//! ```text
//!  round r: write routes.yaml (a + b → v[(r+1)%3]) ─► rendered ─► sleep 0–150 ms ─► kill -9 hawser
//!           ─► a and b on one connection: same Service, old or new ─► hawser run again
//!           ─► converged: a and b → new; one master (the same one); current = lkg = applied; no staging
//! ```
//!
//! Moving a and b between v0 and v1 is a map change (runtime); moving them to
//! or from v2 adds or removes a backend (a reload). The random wait starts
//! when `/status` shows the new generation, that is when the agent starts
//! applying it: counted from the write, the controller's debounce would put
//! every kill before the render. Delays come from a small PRNG seeded per
//! round; the seed is in every failure message.
//!
//! A second test gives a and b an Exact and a Prefix path and a long route
//! map, and kills hawser the moment a answers from the new version: routes
//! live in one map, replaced by one `commit map`, so b must answer from it too.
//! (With exact and prefix routes in two maps, this test caught a kill between
//! the two commits leaving a mix live.)

use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    Backends, CRASH_HOSTS as HOSTS, Manifests, Run, TIMEOUT, TreeSnapshot, crash_routes,
    expect_admin_address_free, expect_one_haproxy_master, expect_one_whole_version,
    expect_sane_tree, haproxy_masters, pod,
};

const ROUNDS: u64 = 20;
const BASE_SEED: u64 = 0x6861_7773_6572_2d39;
const MAX_DELAY_MS: u64 = 150;
/// The "version" Services; generation N of the test routes a and b to one.
const VERSIONS: [&str; 3] = ["v0", "v1", "v2"];
/// Path types of a and b: both prefix routes.
const ONE_MAP: [&str; 2] = ["Prefix", "Prefix"];
/// a an exact route, b a prefix route: different kinds of keys in the one map.
const TWO_MAPS: [&str; 2] = ["Exact", "Prefix"];

/// SplitMix64: a good enough spread of delays from a seed, with no dependency.
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn generation(status: &Value, field: &str) -> u64 {
    status[field]
        .as_u64()
        .unwrap_or_else(|| panic!("/status has no {field}: {status:#}"))
}

/// Where the kill landed, as the tree shows it right after.
fn kill_point(tree: &TreeSnapshot, new_generation: u64) -> &'static str {
    let current = TreeSnapshot::generation(tree.current.as_ref());
    let lkg = TreeSnapshot::generation(tree.lkg.as_ref());
    if !tree.staging.is_empty() {
        "while staging"
    } else if current != lkg {
        "published, not yet verified"
    } else if current == Some(new_generation) {
        "after the apply"
    } else {
        "before publishing"
    }
}

/// `hawser run` serving the fixture with a and b on `v0`, its echo pods,
/// and the HAProxy master it started. Dropped in field order: hawser and
/// HAProxy first.
struct Scene {
    run: Run,
    master: u32,
    _manifests: Manifests,
    _backends: Backends,
}

impl Scene {
    /// The fixture, routes.yaml with these path types, and `more` files.
    async fn start(path_types: [&str; 2], more: &[(&str, String)]) -> (Scene, Value) {
        let pods: Vec<_> = VERSIONS
            .iter()
            .map(|v| pod("crash", v, &format!("{v}-a")))
            .collect();
        let backends = Backends::start(&pods);
        let manifests = Manifests::from_fixture("run_crash_recovery", &backends.vars());
        let routes = (
            "routes.yaml",
            crash_routes("crash", VERSIONS[0], path_types),
        );
        for (name, content) in std::iter::once(&routes).chain(more) {
            std::fs::write(manifests.path().join(name), content).expect("write a manifest");
        }
        let run = Run::start(manifests.path()).await;
        let status = run.wait_converged().await;
        for host in HOSTS {
            run.expect_routed_to(host, "/", VERSIONS[0]).await;
        }
        let masters = haproxy_masters(&run.state_dir());
        assert_eq!(masters.len(), 1, "one HAProxy master at the start");
        let scene = Scene {
            run,
            master: masters[0],
            _manifests: manifests,
            _backends: backends,
        };
        (scene, status)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_applies_leaves_one_whole_version_and_recovers() {
    let (mut scene, mut status) = Scene::start(ONE_MAP, &[]).await;
    let run = &mut scene.run;
    let master = scene.master;

    let started = Instant::now();
    let mut kill_points: BTreeMap<&str, u32> = BTreeMap::new();
    let mut seen_after_kill: BTreeMap<&str, u32> = BTreeMap::new();
    for round in 0..ROUNDS {
        let old = VERSIONS[round as usize % VERSIONS.len()];
        let new = VERSIONS[(round as usize + 1) % VERSIONS.len()];
        let seed = BASE_SEED.wrapping_add(round);
        let delay = Duration::from_millis(splitmix64(seed) % (MAX_DELAY_MS + 1));
        let context = format!(
            "round {round} (seed {seed:#018x}, kill {delay:?} after the render), {old} -> {new}"
        );

        let before = generation(&status, "desired_generation");
        run.write_manifest("routes.yaml", &crash_routes("crash", new, ONE_MAP));
        let rendered = run
            .wait_for_status("the new routes rendered", |s| {
                s["desired_generation"].as_u64().unwrap_or(0) > before
            })
            .await;
        tokio::time::sleep(delay).await;
        run.kill9();

        let tree = TreeSnapshot::read(&run.state_dir());
        let point = kill_point(&tree, generation(&rendered, "desired_generation"));
        *kill_points.entry(point).or_default() += 1;
        let context = format!("{context}, killed {point}");
        let served = expect_one_whole_version(run, &HOSTS, &[old, new], &context).await;
        let served = if served[0] == new { "new" } else { "old" };
        *seen_after_kill.entry(served).or_default() += 1;

        expect_admin_address_free(run, &context).await;
        run.spawn();
        status = run.wait_converged().await;
        for host in HOSTS {
            let reply = run.get(host, "/").await;
            assert_eq!(
                (reply.status, reply.echo().service.as_str()),
                (200, new),
                "{context}: {host} after recovery"
            );
        }
        expect_one_haproxy_master(run, master, &context).await;
        expect_sane_tree(run, &status, &context);
    }
    println!(
        "crash recovery: {ROUNDS} kills in {:.1?}; where they landed: {kill_points:?}; \
         served right after the kill: {seen_after_kill:?}",
        started.elapsed()
    );
}

/// An Ingress with `count` prefix paths on one host: a long route map,
/// so that replacing it at runtime takes a while.
fn bulk_routes(count: usize) -> String {
    let mut paths = String::new();
    for i in 0..count {
        paths.push_str(&format!(
            r#"          - path: /bulk-{i:05}
            pathType: Prefix
            backend: {{ service: {{ name: v0, port: {{ name: http }} }} }}
"#
        ));
    }
    format!(
        r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{ name: bulk, namespace: crash }}
spec:
  ingressClassName: hawser
  rules:
    - host: bulk.example.com
      http:
        paths:
{paths}"#
    )
}

/// Waits, as closely as requests allow, until `host` answers from `service`.
async fn expect_switch_seen(run: &Run, host: &str, service: &str, context: &str) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let response = run.get(host, "/").await;
        if response.status == 200 && response.echo().service == service {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: {host} never answered from {service}"
        );
    }
}

/// The window the test above can only hit by chance, hit on purpose: a has
/// an exact route and b a prefix route, and the route map is long, so moving
/// both between v0 and v1 (a runtime change) takes a while to replace.
/// hawser is killed the moment a answers from the new version; b must too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_between_two_map_commits_leaves_one_whole_version() {
    let (mut scene, _) = Scene::start(TWO_MAPS, &[("bulk.yaml", bulk_routes(3000))]).await;
    let run = &mut scene.run;
    for round in 0..5 {
        let old = VERSIONS[round % 2];
        let new = VERSIONS[(round + 1) % 2];
        let context = format!(
            "round {round}, {old} -> {new}, killed when {} answered from {new}",
            HOSTS[0]
        );
        run.write_manifest("routes.yaml", &crash_routes("crash", new, TWO_MAPS));
        expect_switch_seen(run, HOSTS[0], new, &context).await;
        run.kill9();
        expect_one_whole_version(run, &HOSTS, &[old, new], &context).await;
        run.spawn();
        run.wait_converged().await;
    }
}
