#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

use super::*;
use crate::tls::files;
use crate::tls::testing::{Pki, TlsFiles};

const SECRET: &str = "hawser-agent-identity";
/// Long enough that a test passing within it was woken by notify, not by the poll.
const NO_POLL: Duration = Duration::from_secs(3600);
const WAIT: Duration = Duration::from_secs(10);

/// Polls `condition` until it holds, for at most [`WAIT`].
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn revision(files: &TlsFiles) -> String {
    let dir = tempfile::tempdir().unwrap();
    files.write_plain(dir.path());
    load_dir(dir.path(), Role::Agent, SystemTime::now())
        .unwrap()
        .revision()
        .to_owned()
}

#[tokio::test]
async fn swaps_when_the_dir_store_rewrites_the_secret() {
    let now = SystemTime::now();
    let store = tempfile::tempdir().unwrap();
    let (first, second) = (
        Pki::new(now).files(Role::Agent),
        Pki::new(now).files(Role::Agent),
    );
    let dir = first.write_store(store.path(), SECRET);
    let (shared, task) = watch_dir(&dir, Role::Agent, NO_POLL);
    assert_eq!(shared.current().unwrap().revision(), revision(&first));
    let mut changes = shared.subscribe();

    second.write_store(store.path(), SECRET);
    tokio::time::timeout(WAIT, changes.changed())
        .await
        .expect("a swap, from notify")
        .unwrap();
    assert_eq!(shared.current().unwrap().revision(), revision(&second));
    assert_eq!(shared.status().last_error, None);
    task.abort();
}

#[tokio::test]
async fn a_malformed_revision_keeps_the_last_valid_one() {
    let now = SystemTime::now();
    let store = tempfile::tempdir().unwrap();
    let good = Pki::new(now).files(Role::Agent);
    let dir = good.write_store(store.path(), SECRET);
    let (shared, task) = watch_dir(&dir, Role::Agent, NO_POLL);
    let loaded = shared.current().unwrap().revision().to_owned();

    good.clone()
        .with(files::TLS_CRT, "not a certificate")
        .write_store(store.path(), SECRET);
    eventually("the error recorded", || {
        shared.status().last_error.is_some()
    })
    .await;
    let status = shared.status();
    assert_eq!(status.revision.as_deref(), Some(loaded.as_str()));
    assert!(status.last_error_at.is_some());
    let error = status.last_error.unwrap();
    assert!(
        error.contains("tls.crt") && error.contains("not a valid PEM"),
        "{error}"
    );

    // Fixed again: the error clears; the contents are the loaded ones, so no swap.
    good.write_store(store.path(), SECRET);
    eventually("the error cleared", || shared.status().last_error.is_none()).await;
    assert_eq!(shared.current().unwrap().revision(), loaded);
    task.abort();
}

#[tokio::test]
async fn starts_without_material_and_picks_it_up_later() {
    let store = tempfile::tempdir().unwrap();
    let dir = store.path().join(SECRET);
    let (shared, task) = watch_dir(&dir, Role::Agent, Duration::from_millis(200));
    assert!(shared.current().is_none());
    let status = shared.status();
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("cannot read tls directory"),
        "{status:?}"
    );

    Pki::new(SystemTime::now())
        .files(Role::Agent)
        .write_store(store.path(), SECRET);
    eventually("material loaded", || shared.current().is_some()).await;
    assert_eq!(shared.status().last_error, None);
    task.abort();
}

#[tokio::test]
async fn the_task_ends_with_the_last_handle() {
    let store = tempfile::tempdir().unwrap();
    let (shared, task) = watch_dir(store.path().join(SECRET), Role::Agent, MIN_POLL);
    drop(shared);
    tokio::time::timeout(WAIT, task)
        .await
        .expect("the loop to end")
        .unwrap();
}
