//! How the clients classify refused, cut, silent and unexpected sessions,
//! and the guards of the high-level operations, against a scripted socket.

use crate::support;

use std::time::Duration;

use hawser_haproxy::{MasterCli, RuntimeApi, SocketError};
use support::fake_socket::{FakeSocket, Session};

#[tokio::test]
async fn refused_connections_are_busy_not_failures() {
    let (_dir, path) = FakeSocket::refusing();
    let error = MasterCli::new(&path).reload().await.unwrap_err();
    assert!(error.is_busy(), "{error:?}");
    assert_eq!(error.metric_label(), "busy");
    let error = RuntimeApi::new(&path).show_info().await.unwrap_err();
    assert!(error.is_busy(), "{error:?}");
}

#[tokio::test]
async fn missing_socket_is_a_connect_error() {
    let error = MasterCli::new("/nonexistent/master.sock")
        .show_proc()
        .await
        .unwrap_err();
    assert!(matches!(error, SocketError::Connect { .. }), "{error:?}");
}

#[tokio::test]
async fn a_session_cut_without_reply_is_busy_on_the_master_only() {
    let fake = FakeSocket::serve(vec![Session::CloseSilently, Session::CloseSilently]);
    let error = MasterCli::new(&fake.path).reload().await.unwrap_err();
    assert!(error.is_busy(), "{error:?}");
    let error = RuntimeApi::new(&fake.path).show_info().await.unwrap_err();
    assert!(matches!(error, SocketError::NoReply { .. }), "{error:?}");
}

#[tokio::test]
async fn silence_times_out() {
    let fake = FakeSocket::serve(vec![Session::Hang, Session::Hang]);
    let started = std::time::Instant::now();
    let error = MasterCli::new(&fake.path)
        .with_reload_timeout(Duration::from_millis(100))
        .reload()
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SocketError::Timeout { command, .. } if command == "reload"),
        "{error:?}"
    );
    let error = RuntimeApi::new(&fake.path)
        .with_timeout(Duration::from_millis(100))
        .show_info()
        .await
        .unwrap_err();
    assert_eq!(error.metric_label(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn master_sessions_end_with_quit_and_unknown_replies_are_rejected() {
    let fake = FakeSocket::serve(vec![Session::Reply("Permission denied\n\n")]);
    let error = MasterCli::new(&fake.path).reload().await.unwrap_err();
    match error {
        SocketError::Rejected { command, reply } => {
            assert_eq!(
                (command.as_str(), reply.as_str()),
                ("reload", "Permission denied")
            );
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    assert_eq!(fake.received(), ["reload;quit\n"]);
}

#[tokio::test]
async fn replace_map_never_commits_a_short_version() {
    let fake = FakeSocket::serve(vec![
        Session::Reply("New version created: 7\n\n"),
        Session::Reply("\n"),
        // HAProxy kept only one of the two entries.
        Session::Reply("0x55bd2c106670 a.example.test be_a\n\n"),
        Session::Reply("\n"),
    ]);
    let entries = [("a.example.test", "be_a"), ("b.example.test", "be_b")];
    let error = RuntimeApi::new(&fake.path)
        .replace_map("maps/hosts.map", &entries)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            SocketError::MapCountMismatch {
                version: 7,
                expected: 2,
                found: 1,
                ..
            }
        ),
        "{error:?}"
    );
    let received = fake.received();
    assert_eq!(
        received,
        [
            "prepare map maps/hosts.map\n",
            "add map @7 maps/hosts.map <<\na.example.test be_a\nb.example.test be_b\n\n",
            "show map @7 maps/hosts.map\n",
        ]
    );
}

#[tokio::test]
async fn a_failed_commit_is_aborted_and_the_pem_stays_out_of_errors() {
    let fake = FakeSocket::serve(vec![
        Session::Reply("Transaction created for certificate certs/a.pem!\n\n"),
        Session::Reply(
            "inconsistencies between private key and certificate loaded 'certs/a.pem'.\nCan't commit certs/a.pem!\n\n",
        ),
        Session::Reply("Transaction aborted for certificate 'certs/a.pem'!\n\n"),
    ]);
    let pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n\n-----BEGIN PRIVATE KEY-----\nSECRETKEY\n-----END PRIVATE KEY-----\n";
    let error = RuntimeApi::new(&fake.path)
        .update_ssl_cert("certs/a.pem", pem)
        .await
        .unwrap_err();
    match &error {
        SocketError::Rejected { command, reply } => {
            assert_eq!(command, "commit ssl cert certs/a.pem");
            assert!(reply.starts_with("inconsistencies"), "{reply}");
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("SECRETKEY"), "{shown}");
    let received = fake.received();
    // The blank line between certificate and key was dropped, so the key
    // travels inside the payload, which ends with exactly one empty line.
    assert_eq!(
        received[0],
        "set ssl cert certs/a.pem <<\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nSECRETKEY\n-----END PRIVATE KEY-----\n\n"
    );
    assert_eq!(
        received[1..],
        [
            "commit ssl cert certs/a.pem\n",
            "abort ssl cert certs/a.pem\n"
        ]
    );
}

#[tokio::test]
async fn a_failed_abort_is_reported_as_a_transaction_left_open() {
    let fake = FakeSocket::serve(vec![
        Session::Reply("Transaction created for certificate certs/a.pem!\n\n"),
        Session::Reply("Can't commit certs/a.pem!\n\n"),
        Session::Hang,
    ]);
    let error = RuntimeApi::new(&fake.path)
        .with_timeout(Duration::from_millis(200))
        .update_ssl_cert("certs/a.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n")
        .await
        .unwrap_err();
    assert_eq!(
        error.metric_label(),
        "ssl_transaction_left_open",
        "{error:?}"
    );
}

#[tokio::test]
async fn arguments_that_would_split_a_command_are_never_sent() {
    let fake = FakeSocket::serve(vec![]);
    let api = RuntimeApi::new(&fake.path);
    let error = api
        .set_server_weight("be_app;shutdown", "s1", 1)
        .await
        .unwrap_err();
    assert!(
        matches!(error, SocketError::InvalidArgument { .. }),
        "{error:?}"
    );
    let error = api.set_map("maps/hosts.map", "a b", "x").await.unwrap_err();
    assert!(
        matches!(error, SocketError::InvalidArgument { .. }),
        "{error:?}"
    );
    let error = api
        .add_map_payload(1, "maps/hosts.map", &[("k", "line\nbreak")])
        .await
        .unwrap_err();
    assert!(
        matches!(error, SocketError::InvalidArgument { .. }),
        "{error:?}"
    );
    assert!(fake.received().is_empty());
}

#[tokio::test]
async fn oversized_payloads_are_refused_before_sending() {
    let fake = FakeSocket::serve(vec![]);
    let api = RuntimeApi::new(&fake.path).with_max_command_bytes(1024);
    let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n", "A".repeat(2000));
    let error = api.set_ssl_cert("certs/a.pem", &pem).await.unwrap_err();
    assert!(
        matches!(error, SocketError::PayloadTooLarge { .. }),
        "{error:?}"
    );
    assert!(!error.to_string().contains("AAAA"));
    assert!(fake.received().is_empty());
}
