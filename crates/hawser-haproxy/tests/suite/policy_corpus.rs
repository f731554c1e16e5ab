//! The hostile corpus against the config policy, alone and through
//! `HaproxyBinary::check`: every case is refused for its reason, and the
//! HAProxy binary is never run on it.
//!
//! One test runs the fake binary on purpose: the script is written before
//! anything is run (see `fake_binary.rs` on ETXTBSY).

use crate::hostile_configs;

use std::{fs, os::unix::fs::PermissionsExt};

use hawser_haproxy::{ConfigPolicy, HaproxyBinary, HaproxyError, TreeDir};
use hostile_configs::corpus;

/// A policy trusting what a hawser mode trusts, so refusals are not just
/// "nothing is trusted".
fn policy() -> ConfigPolicy {
    ConfigPolicy::default()
        .allow_socket("/run/hawser/admin.sock")
        .allow_socket_dir("/run/hawser")
        .allow_file("/run/hawser/server-state")
        .allow_lua_digest([7; 32])
}

#[test]
fn the_corpus_is_large_enough_and_named_uniquely() {
    let cases = corpus();
    assert!(cases.len() >= 40, "{}", cases.len());
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len());
}

#[test]
fn every_case_is_refused_for_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for case in corpus() {
        match policy().check_config(&case.config, &TreeDir(dir.path())) {
            Err(error) if error.metric_label() == case.reason => {}
            other => wrong.push(format!("{}: {other:?}", case.name)),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test]
async fn nothing_is_run_on_any_case() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let binary = dir.path().join("haproxy");
    // Run, it leaves a marker where it may (the check's sandbox forbids
    // writes where the kernel has Landlock) and always says so on stderr.
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = -v ]; then\n  echo 'HAProxy version 3.0.11-1 2025/06/02 - https://haproxy.org/'\n  exit 0\nfi\necho '[ALERT] fake haproxy ran' >&2\n: > '{}'\nexit 1\n",
        marker.display()
    );
    fs::write(&binary, script).unwrap();
    fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).unwrap();
    let haproxy = HaproxyBinary::at(&binary).unwrap();

    for case in corpus() {
        let tree = dir.path().join(&case.name);
        fs::create_dir(&tree).unwrap();
        fs::write(tree.join("haproxy.cfg"), &case.config).unwrap();
        let error = haproxy
            .check(&policy(), &tree, "haproxy.cfg")
            .await
            .expect_err(&case.name);
        assert!(
            matches!(&error, HaproxyError::Refused(e) if e.metric_label() == case.reason),
            "{}: {error:?}",
            case.name
        );
        assert!(!marker.exists(), "{}: haproxy was run", case.name);
    }
    // The fake does run on a configuration the policy lets through.
    let clean = dir.path().join("clean");
    fs::create_dir(&clean).unwrap();
    fs::write(clean.join("haproxy.cfg"), "global\n  log stdout local0\n").unwrap();
    let ran = haproxy
        .check(&policy(), &clean, "haproxy.cfg")
        .await
        .unwrap_err();
    assert!(
        matches!(&ran, HaproxyError::CheckFailed { output, .. } if output.contains("fake haproxy ran")),
        "{ran:?}"
    );
}
