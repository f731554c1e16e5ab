//! The crate graph says what DESIGN.md says: the controller and the agent
//! are peers over the plan, the domain core knows no Kubernetes, and no role
//! crate reaches another for a convenience type.
//!
//! Oracle: `cargo metadata` lists every workspace crate's declared
//! dependencies; following the workspace crates among them (normal
//! dependencies, or every kind where a rule says so) must never reach a
//! forbidden crate. An arrow still being removed is listed in [`PENDING`]
//! and tolerated; once it is gone, this test fails until it is taken off the
//! list, so the list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Which dependencies a rule follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kinds {
    /// What the crate is built with (`[dependencies]`).
    Normal,
    /// Its tests and benches too (`[dev-dependencies]`, `[build-dependencies]`).
    All,
}

/// `(from, kinds, forbidden)`: nothing `from` depends on, directly or through
/// other workspace crates, may be `forbidden`.
const RULES: &[(&str, Kinds, &[&str])] = &[
    (
        "hawser-controller",
        Kinds::Normal,
        &["hawser-agent", "hawser"],
    ),
    (
        "hawser-agent",
        Kinds::Normal,
        &[
            "hawser-render",
            "hawser-model",
            "hawser-controller",
            "k8s-openapi",
            "kube",
            "gateway-api",
            "minijinja",
            "hawser",
        ],
    ),
    (
        "hawser-model",
        Kinds::Normal,
        &["k8s-openapi", "gateway-api", "kube"],
    ),
    (
        "hawser-plan",
        Kinds::Normal,
        &[
            "hawser-model",
            "hawser-k8s",
            "hawser-render",
            "hawser-haproxy",
            "hawser-agent",
            "hawser-controller",
            "hawser-proto",
            "hawser",
        ],
    ),
    (
        "hawser-k8s",
        Kinds::Normal,
        &[
            "hawser-render",
            "hawser-haproxy",
            "hawser-agent",
            "hawser-controller",
            "hawser",
        ],
    ),
    (
        "hawser-render",
        Kinds::All,
        &["hawser-controller", "hawser-agent", "hawser"],
    ),
    (
        "hawser-haproxy",
        Kinds::Normal,
        &[
            "hawser-render",
            "hawser-model",
            "hawser-agent",
            "hawser-controller",
        ],
    ),
    (
        "hawser-pki",
        Kinds::Normal,
        &["hawser-render", "hawser-agent", "hawser-controller"],
    ),
    (
        "hawser-proto",
        Kinds::Normal,
        &[
            "hawser-render",
            "hawser-model",
            "hawser-agent",
            "hawser-controller",
        ],
    ),
    (
        "hawser-echo",
        Kinds::Normal,
        &["hawser-render", "hawser-agent", "hawser-controller"],
    ),
    (
        "hawser-crd",
        Kinds::Normal,
        &["hawser-agent", "hawser-controller", "hawser"],
    ),
    // Test-only crash points: a leaf every role may use, using none.
    (
        "hawser-failpoint",
        Kinds::All,
        &[
            "hawser-plan",
            "hawser-haproxy",
            "hawser-agent",
            "hawser-controller",
            "hawser",
        ],
    ),
];

/// Arrows that break a rule and are being removed, as `(from, forbidden)`:
/// none now. A rule a change must break for a while is listed here, in the
/// commit that says why.
const PENDING: &[(&str, &str)] = &[];

/// Each workspace crate's dependencies by name, with whether each is a
/// normal one.
fn declared() -> BTreeMap<String, Vec<(String, bool)>> {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            let dependencies = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| (d["name"].as_str().unwrap().to_string(), d["kind"].is_null()))
                .collect();
            (package["name"].as_str().unwrap().to_string(), dependencies)
        })
        .collect()
}

/// Everything `from` reaches: its dependencies of `kinds`, then the normal
/// dependencies of the workspace crates among them (what a crate is built
/// with), and so on.
fn reached(
    graph: &BTreeMap<String, Vec<(String, bool)>>,
    from: &str,
    kinds: Kinds,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let first = graph[from]
        .iter()
        .filter(|(_, normal)| *normal || kinds == Kinds::All)
        .map(|(name, _)| name.clone());
    let mut next: Vec<String> = first.collect();
    while let Some(name) = next.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(deps) = graph.get(&name) {
            next.extend(
                deps.iter()
                    .filter(|(_, normal)| *normal)
                    .map(|(n, _)| n.clone()),
            );
        }
    }
    seen
}

#[test]
fn no_forbidden_arrow_appears() {
    let graph = declared();
    let mut broken = BTreeSet::new();
    for (from, kinds, forbidden) in RULES {
        assert!(
            graph.contains_key(*from),
            "no crate {from} in the workspace"
        );
        let reach = reached(&graph, from, *kinds);
        for target in *forbidden {
            if reach.contains(*target) {
                broken.insert((from.to_string(), target.to_string()));
            }
        }
    }
    let pending: BTreeSet<(String, String)> = PENDING
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<_> = broken.difference(&pending).collect();
    assert!(new.is_empty(), "forbidden dependencies appeared: {new:?}");
    let gone: Vec<_> = pending.difference(&broken).collect();
    assert!(
        gone.is_empty(),
        "these arrows are gone: take them off PENDING so they cannot come back: {gone:?}"
    );
}

#[test]
fn no_role_crate_depends_on_the_binary() {
    let graph = declared();
    for (name, deps) in &graph {
        assert!(
            deps.iter().all(|(dep, _)| dep != "hawser"),
            "{name} depends on the binary crate"
        );
    }
}

/// The crash points (`hawser-failpoint`) are off in every build of hawser
/// that is not a test build: cargo, resolving features without
/// dev-dependencies (as `cargo build --release` does), turns no
/// `failpoints` feature on, while the test builds have it.
#[test]
fn crash_points_are_only_in_test_builds() {
    let features = |edges: &str| {
        let output = Command::new(env!("CARGO"))
            .args(["tree", "--offline", "-p", "hawser", "-e", edges])
            .args([
                "-i",
                "hawser-failpoint",
                "-f",
                "{p} [{f}]",
                "--prefix",
                "none",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo tree runs");
        assert!(
            output.status.success(),
            "cargo tree: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    // Each line is `<package> <version> (<path>) [<features>]`.
    let armed = |tree: &str| {
        tree.lines().any(|line| {
            line.rsplit_once('[')
                .is_some_and(|(_, features)| features.contains("failpoints"))
        })
    };
    let release = features("normal,build");
    assert!(
        release.contains("hawser-agent") && !armed(&release),
        "a build without dev-dependencies turns crash points on:\n{release}"
    );
    let test = features("normal,build,dev");
    assert!(
        armed(&test),
        "the test builds lost their crash points:\n{test}"
    );
}
