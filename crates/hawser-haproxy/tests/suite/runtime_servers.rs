//! Server commands against a real HAProxy: the dynamic server life cycle
//! and the removal protocol.

use crate::support;

use std::{net::IpAddr, time::Duration};

use hawser_haproxy::{AdminState, CommandBatch, RuntimeApi, ServerState, SocketError, WaitOutcome};
use support::running::RunningHaproxy;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{UnixListener, UnixStream},
};

const LOCALHOST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

async fn server(api: &RuntimeApi, backend: &str, name: &str) -> Option<ServerState> {
    api.show_servers_state(Some(backend))
        .await
        .unwrap()
        .into_iter()
        .find(|state| state.name == name)
}

/// The state of `be_app/<name>` once `ready` holds, within a second.
async fn eventually(
    api: &RuntimeApi,
    name: &str,
    ready: impl Fn(&ServerState) -> bool,
) -> ServerState {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        let state = server(api, "be_app", name).await;
        match state {
            Some(state) if ready(&state) => return state,
            _ if std::time::Instant::now() > deadline => {
                panic!("be_app/{name} never reached the expected state: {state:?}")
            }
            _ => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
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
async fn dynamic_server_round_trip() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;

    api.add_server("be_app", "dyn1", LOCALHOST, 18093, &["weight", "5"])
        .await
        .unwrap();
    assert_rejected(
        api.add_server("be_app", "dyn1", LOCALHOST, 18093, &[])
            .await,
        "Already exists",
    );
    let added = server(api, "be_app", "dyn1").await.unwrap();
    assert_eq!(
        (added.addr.as_str(), added.port, added.weight),
        ("127.0.0.1", 18093, 5)
    );
    assert!(
        added.in_maintenance(),
        "add server creates servers in MAINT: {added:?}"
    );

    api.enable_server("be_app", "dyn1").await.unwrap();
    assert!(
        !server(api, "be_app", "dyn1")
            .await
            .unwrap()
            .in_maintenance()
    );

    api.set_server_addr("be_app", "dyn1", "::1".parse().unwrap(), 18094)
        .await
        .unwrap();
    // Setting the same address again is a success too (`nothing changed`).
    api.set_server_addr("be_app", "dyn1", "::1".parse().unwrap(), 18094)
        .await
        .unwrap();
    api.set_server_weight("be_app", "dyn1", 7).await.unwrap();
    // The address is applied asynchronously; the weight at once.
    let moved = eventually(api, "dyn1", |state| state.addr == "::1").await;
    assert_eq!((moved.port, moved.weight), (18094, 7));
    assert_rejected(
        api.set_server_weight("be_app", "dyn1", 300).await,
        "between 0 and 256",
    );

    api.set_server_state("be_app", "dyn1", AdminState::Drain)
        .await
        .unwrap();
    assert!(server(api, "be_app", "dyn1").await.unwrap().draining());
    // Not in maintenance yet: `wait` fails at once, and so does `del`.
    assert_rejected(
        api.wait_srv_removable("be_app", "dyn1", Duration::from_secs(1))
            .await,
        "Failed.",
    );
    assert_rejected(api.del_server("be_app", "dyn1").await, "maintenance");

    api.set_server_state("be_app", "dyn1", AdminState::Maint)
        .await
        .unwrap();
    assert!(
        server(api, "be_app", "dyn1")
            .await
            .unwrap()
            .in_maintenance()
    );
    let outcome = api
        .wait_srv_removable("be_app", "dyn1", Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(outcome, WaitOutcome::Removable);
    api.del_server("be_app", "dyn1").await.unwrap();
    assert_eq!(server(api, "be_app", "dyn1").await, None);
    assert_rejected(api.del_server("be_app", "dyn1").await, "No such server.");

    api.add_server("be_app", "dyn6", "::1".parse().unwrap(), 18096, &[])
        .await
        .unwrap();
    eventually(api, "dyn6", |state| state.addr == "::1").await;
}

#[tokio::test]
async fn wait_srv_removable_expires_while_a_connection_is_attached() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;
    let backend = UnixListener::bind(haproxy.path("backend.sock")).unwrap();

    // client → hold.sock → HAProxy → backend.sock, kept open.
    let mut client = UnixStream::connect(haproxy.path("hold.sock"))
        .await
        .unwrap();
    client.write_all(b"x").await.unwrap();
    let (mut upstream, _) = tokio::time::timeout(Duration::from_secs(3), backend.accept())
        .await
        .expect("haproxy did not connect to the backend")
        .unwrap();
    let mut byte = [0_u8; 1];
    upstream.read_exact(&mut byte).await.unwrap();

    api.set_server_state("hold", "h", AdminState::Maint)
        .await
        .unwrap();
    let outcome = api
        .wait_srv_removable("hold", "h", Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(outcome, WaitOutcome::DelayExpired);
    assert_rejected(api.del_server("hold", "h").await, "connections attached");

    // After the drain budget: kill the stream, then the server is removable.
    api.shutdown_sessions("hold", "h").await.unwrap();
    let outcome = api
        .wait_srv_removable("hold", "h", Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(outcome, WaitOutcome::Removable);
    api.set_server_state("hold", "h", AdminState::Ready)
        .await
        .unwrap();
}

#[tokio::test]
async fn server_state_listing_and_raw_text() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;
    let all = api.show_servers_state(None).await.unwrap();
    let names: Vec<_> = all
        .iter()
        .map(|state| format!("{}/{}", state.backend, state.name))
        .collect();
    assert_eq!(names, ["be_app/s1", "be_app/s2", "hold/h"]);
    assert_rejected(
        api.show_servers_state(Some("nope")).await,
        "Can't find backend.",
    );

    let raw = api.show_servers_state_raw().await.unwrap();
    assert!(
        raw.starts_with("1\n# be_id be_name srv_id srv_name"),
        "{raw}"
    );
    assert!(raw.ends_with("\n") && !raw.ends_with("\n\n"), "{raw:?}");
    assert_eq!(raw.lines().count(), 2 + all.len());
}

/// A batch of server commands is one session to the worker: its commands
/// run in order, and a failed one is named with HAProxy's words.
#[tokio::test]
async fn server_commands_batched_in_one_session_run_in_order() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;

    let mut batch = CommandBatch::new();
    for (name, port) in [("b1", 18101), ("b2", 18102)] {
        batch
            .add_server("be_app", name, LOCALHOST, port, &["weight", "3"])
            .unwrap();
        batch.enable_server("be_app", name).unwrap();
    }
    batch
        .set_server_state("be_app", "b1", AdminState::Maint)
        .unwrap();
    batch.set_server_weight("be_app", "b2", 9).unwrap();
    api.run_batch(&batch).await.unwrap();
    let b1 = server(api, "be_app", "b1").await.unwrap();
    let b2 = server(api, "be_app", "b2").await.unwrap();
    assert!(b1.in_maintenance(), "{b1:?}");
    assert!(!b2.in_maintenance(), "{b2:?}");
    assert_eq!(
        (b1.port, b1.weight, b2.port, b2.weight),
        (18101, 3, 18102, 9)
    );

    // The same servers again: the first command fails and is the one named,
    // though HAProxy ran the rest of the line.
    let mut again = CommandBatch::new();
    again
        .add_server("be_app", "b1", LOCALHOST, 18101, &[])
        .unwrap();
    again.enable_server("be_app", "b1").unwrap();
    match api.run_batch(&again).await {
        Err(SocketError::Rejected { command, reply }) => {
            assert!(command.starts_with("add server be_app/b1 "), "{command}");
            assert!(reply.contains("Already exists"), "{reply}");
        }
        other => panic!("expected the add to be named, got {other:?}"),
    }
    assert!(!server(api, "be_app", "b1").await.unwrap().in_maintenance());

    // More commands than one command line holds go in several sessions.
    let small = api.clone().with_max_command_bytes(120);
    let mut many = CommandBatch::new();
    for name in ["b1", "b2"] {
        for state in [AdminState::Drain, AdminState::Maint] {
            many.set_server_state("be_app", name, state).unwrap();
        }
    }
    small.run_batch(&many).await.unwrap();
    for name in ["b1", "b2"] {
        let state = server(api, "be_app", name).await.unwrap();
        assert!(state.in_maintenance(), "{state:?}");
    }
}
