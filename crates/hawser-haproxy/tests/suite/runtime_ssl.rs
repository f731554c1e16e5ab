//! Certificate commands against a real HAProxy: updates, the process-wide
//! transaction, crt-list entries with SNI filters, deletion.

use crate::support;

use hawser_haproxy::{RuntimeApi, SocketError};
use support::{certs, running::RunningHaproxy};

const LIST: &str = "certs/crt-list.txt";

async fn no_transaction(api: &RuntimeApi) {
    let list = api.show_ssl_certs().await.unwrap();
    assert_eq!(list.transaction, None, "{list:?}");
}

fn assert_rejected(result: Result<impl std::fmt::Debug, SocketError>, words: &str) {
    match result {
        Err(SocketError::Rejected { reply, .. }) => {
            assert!(reply.contains(words), "expected {words:?} in {reply:?}");
        }
        other => panic!("expected a rejection saying {words:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn update_replaces_a_crt_list_certificate() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;
    let before = api.show_ssl_cert("certs/a.pem").await.unwrap();
    assert_eq!(before.status, "Used");

    // A blank line between certificate and key must not cut the payload.
    let (cert, key) = certs::parts("a.example.test");
    api.update_ssl_cert("certs/a.pem", &format!("{cert}\n\n{key}"))
        .await
        .unwrap();
    let after = api.show_ssl_cert("certs/a.pem").await.unwrap();
    assert_ne!(after.serial, before.serial);
    assert_ne!(after.sha1_fingerprint, before.sha1_fingerprint);
    assert_eq!(after.status, "Used");
    no_transaction(api).await;
}

#[tokio::test]
async fn mismatched_key_fails_at_commit_and_is_aborted() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;
    let before = api.show_ssl_cert("certs/a.pem").await.unwrap();

    let (cert, _) = certs::parts("a.example.test");
    let (_, other_key) = certs::parts("other.example.test");
    let error = api
        .update_ssl_cert("certs/a.pem", &format!("{cert}{other_key}"))
        .await
        .unwrap_err();
    match &error {
        SocketError::Rejected { command, reply } => {
            assert_eq!(command, "commit ssl cert certs/a.pem");
            assert!(reply.contains("inconsistencies"), "{reply}");
        }
        other => panic!("expected a rejected commit, got {other:?}"),
    }
    assert!(!format!("{error} {error:?}").contains("PRIVATE KEY"));
    no_transaction(api).await;
    assert_eq!(
        api.show_ssl_cert("certs/a.pem").await.unwrap().serial,
        before.serial
    );

    // Garbage is refused by `set` itself.
    let error = api
        .update_ssl_cert("certs/a.pem", "not a pem")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SocketError::Rejected { command, .. } if command == "set ssl cert certs/a.pem <<"),
        "{error:?}"
    );
    no_transaction(api).await;
}

#[tokio::test]
async fn abort_open_transaction_cleans_up_after_a_crash() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;
    assert_eq!(api.abort_open_transaction().await.unwrap(), None);

    // A crashed agent: `set` without commit or abort.
    api.set_ssl_cert("certs/a.pem", &certs::pem("a.example.test"))
        .await
        .unwrap();
    let listed = api.show_ssl_certs().await.unwrap();
    assert_eq!(listed.transaction.as_deref(), Some("certs/a.pem"));
    assert!(listed.certs.contains(&"certs/a.pem".to_owned()));

    // The transaction is process-wide: another certificate cannot be
    // updated, and its failed update leaves the foreign transaction alone.
    assert_rejected(
        api.update_ssl_cert("certs/default.pem", &certs::pem("default.example.test"))
            .await,
        "The ongoing transaction is about 'certs/a.pem'",
    );
    assert_eq!(
        api.show_ssl_certs().await.unwrap().transaction.as_deref(),
        Some("certs/a.pem")
    );

    assert_eq!(
        api.abort_open_transaction().await.unwrap().as_deref(),
        Some("certs/a.pem")
    );
    no_transaction(api).await;
    api.update_ssl_cert("certs/default.pem", &certs::pem("default.example.test"))
        .await
        .unwrap();
}

#[tokio::test]
async fn crt_list_entry_with_sni_filters_then_delete() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;

    api.new_ssl_cert("certs/b.pem").await.unwrap();
    assert_rejected(api.new_ssl_cert("certs/b.pem").await, "already exists");
    assert_rejected(
        api.add_ssl_crt_list(LIST, "certs/b.pem", &[]).await,
        "is empty",
    );
    api.update_ssl_cert("certs/b.pem", &certs::pem("b.example.test"))
        .await
        .unwrap();
    assert_eq!(
        api.show_ssl_cert("certs/b.pem").await.unwrap().status,
        "Unused"
    );

    api.add_ssl_crt_list(
        LIST,
        "certs/b.pem",
        &["b.example.test", "!x.b.example.test"],
    )
    .await
    .unwrap();
    let entries = api.show_ssl_crt_list(LIST).await.unwrap();
    let b = entries
        .iter()
        .find(|entry| entry.cert == "certs/b.pem")
        .expect("certs/b.pem is not in the crt-list");
    assert_eq!(b.sni_filters, ["b.example.test", "!x.b.example.test"]);
    assert_eq!(
        api.show_ssl_cert("certs/b.pem").await.unwrap().status,
        "Used"
    );

    // Still referenced by the crt-list: cannot be deleted.
    assert_rejected(api.del_ssl_cert("certs/b.pem").await, "in use");

    // Two entries for one certificate need `<cert>:<line>`.
    api.add_ssl_crt_list(LIST, "certs/b.pem", &["b2.example.test"])
        .await
        .unwrap();
    assert_rejected(
        api.del_ssl_crt_list(LIST, "certs/b.pem").await,
        "several entries",
    );
    let lines: Vec<u32> = api
        .show_ssl_crt_list(LIST)
        .await
        .unwrap()
        .into_iter()
        .filter(|entry| entry.cert == "certs/b.pem")
        .map(|entry| entry.line)
        .collect();
    assert_eq!(lines.len(), 2);
    api.del_ssl_crt_list(LIST, &format!("certs/b.pem:{}", lines[0]))
        .await
        .unwrap();
    api.del_ssl_crt_list(LIST, "certs/b.pem").await.unwrap();
    assert!(
        api.show_ssl_crt_list(LIST)
            .await
            .unwrap()
            .iter()
            .all(|entry| entry.cert != "certs/b.pem")
    );

    api.del_ssl_cert("certs/b.pem").await.unwrap();
    assert!(
        !api.show_ssl_certs()
            .await
            .unwrap()
            .certs
            .contains(&"certs/b.pem".to_owned())
    );
    // The bind's own `crt` certificate can never be deleted.
    assert_rejected(api.del_ssl_cert("certs/default.pem").await, "in use");
}
