//! Upgrading HAProxy in place: `hawser run` serves with one HAProxy binary,
//! the binary is replaced by another version, and the next reload moves the
//! running HAProxy onto it while traffic flows; not one request fails
//! (fixture `run_upgrade_in_place/`).
//!
//! ```text
//!  hawser run ── HAWSER_HAPROXY=<tmp>/haproxy ──► symlink ──► 3.0.11   (HAWSER_HAPROXY)
//!                                                       └──► 3.2      (HAWSER_HAPROXY_UPGRADE)
//!  8 clients ──GET app.example.com──► HAProxy ──► app-a, app-b
//!  test: switch the symlink ─► add an Ingress for extra (a reload) ─► 3.2 serves it
//! ```
//!
//! Oracle: HAProxy's master re-executes itself on every reload
//! (`mworker_reexec()` in its `src/mworker.c`: `execvp(argv[0], ...)` with its
//! original arguments plus `-sf <old workers>` and `-x sockpair@<fd>`, which
//! hands the listening sockets over). A reload therefore runs whatever binary
//! the path in the master's `argv[0]` names at that moment; the new master
//! logs "haproxy version is ..." and "path to executable is ...". The agent
//! starts the master with the path it was given, unresolved, so a symlink
//! switched under it is followed at the next reload: that is how hawser
//! upgrades HAProxy without a restart. Afterwards the worker's `show info`
//! and the master's `show proc` report the new version, the reload's
//! generation is served, and, the listeners having been handed over, no
//! request failed.

use crate::support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hawser_haproxy::HaproxyBinary;
use support::{
    Backends, Load, LoadTarget, Manifests, Run, RunOptions, haproxy_binary, haproxy_upgrade_binary,
    pod,
};

const NAMESPACE: &str = "upgrade";
const CLIENTS: usize = 8;
const EXTRA_HOST: &str = "extra.example.com";
/// How long the load runs on each side of the upgrade.
const LOAD_PHASE: Duration = Duration::from_millis(500);

/// The version `haproxy -v` reports for `binary`, e.g. `3.2.26`.
fn version_of(binary: &Path) -> String {
    HaproxyBinary::at(binary)
        .unwrap_or_else(|e| panic!("{} is not a usable HAProxy: {e}", binary.display()))
        .version()
        .to_string()
}

/// Points the symlink `link` at `target`, atomically (a new link renamed
/// over the old), as a package manager replaces a binary.
fn switch_link(link: &Path, target: &Path) {
    let next = link.with_extension("next");
    let _ = std::fs::remove_file(&next);
    symlink(target, &next).expect("create the next symlink");
    std::fs::rename(&next, link).expect("switch the symlink");
}

/// An Ingress routing all of extra.example.com to Service extra.
fn extra_ingress() -> String {
    format!(
        r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{ name: extra, namespace: {NAMESPACE} }}
spec:
  ingressClassName: hawser
  rules:
    - host: {EXTRA_HOST}
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: {{ service: {{ name: extra, port: {{ name: http }} }} }}
"#
    )
}

/// The version the worker's `show info` reports (`3.2.26-1`, `3.0.11-9e587df`).
async fn worker_version(run: &Run) -> String {
    let info = run.runtime().show_info().await.expect("show info");
    info.get("Version")
        .cloned()
        .unwrap_or_else(|| panic!("show info has no Version: {info:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_after_the_binary_is_replaced_runs_the_new_version_without_failing_a_request() {
    let (old_binary, new_binary) = (haproxy_binary(), haproxy_upgrade_binary());
    let (old_version, new_version) = (version_of(&old_binary), version_of(&new_binary));
    assert_ne!(
        old_version, new_version,
        "HAWSER_HAPROXY and HAWSER_HAPROXY_UPGRADE are both HAProxy {old_version}: \
         the upgrade needs two versions"
    );
    let bin_dir = tempfile::tempdir().expect("a directory for the symlink");
    let link: PathBuf = bin_dir.path().join("haproxy");
    symlink(&old_binary, &link).expect("symlink the first HAProxy");

    let backends = Backends::start(&[
        pod(NAMESPACE, "app", "app-a"),
        pod(NAMESPACE, "app", "app-b"),
        pod(NAMESPACE, "extra", "extra-a"),
    ]);
    let manifests = Manifests::from_fixture("run_upgrade_in_place", &backends.vars());
    // No spare backends: the Ingress for extra takes a reload.
    let options = RunOptions {
        config_tail: "  spareBackends: 0\n".to_string(),
        haproxy: Some(link.clone()),
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    run.wait_converged().await;
    let before = worker_version(&run).await;
    assert!(
        before.starts_with(&old_version),
        "HAProxy {old_version} should serve first, show info says {before}"
    );

    let load = Load::start(
        run.http,
        CLIENTS,
        vec![LoadTarget::new("app.example.com", &["app-a", "app-b"])],
    );
    tokio::time::sleep(LOAD_PHASE).await;
    switch_link(&link, &new_binary);
    let generation = run.desired_generation().await;
    run.write_manifest("extra.yaml", &extra_ingress());
    let status = run.expect_outcome_after(generation, "reload").await;
    run.expect_routed_to(EXTRA_HOST, "/", "extra").await;
    tokio::time::sleep(LOAD_PHASE).await;
    let report = load.stop().await;
    println!("upgrade in place {old_version} -> {new_version}; load: {report}");

    let after = worker_version(&run).await;
    assert!(
        after.starts_with(&new_version),
        "after the reload the worker should run HAProxy {new_version}, show info says {after}\n{}",
        run.output()
    );
    let table = run.master().show_proc().await.expect("show proc");
    assert!(
        table.master.version.starts_with(&new_version)
            && table
                .workers
                .iter()
                .all(|w| w.version.starts_with(&new_version)),
        "the master and its workers should run HAProxy {new_version}: {table:?}"
    );
    assert_eq!(
        report.failures, 0,
        "requests failed while HAProxy was upgraded: {report}"
    );
    assert!(
        report.requests >= 10 * CLIENTS as u64,
        "the load barely ran: {report}"
    );
    assert_eq!(
        status["agent"]["failed_reloads"], 0,
        "the upgrading reload must not fail: {status:#}"
    );
}
