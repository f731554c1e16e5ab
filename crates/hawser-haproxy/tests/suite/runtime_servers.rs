//! Server commands against a real HAProxy: the dynamic server life cycle
//! and the removal protocol.

use crate::support;

use std::{net::IpAddr, time::Duration};

use hawser_haproxy::{AdminState, RuntimeApi, ServerState, SocketError, WaitOutcome};
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
