//! Runtime operations as the commands a worker receives: which copy of a
//! twinned map is read, asked once, then known; servers changed and
//! removed together.

use std::path::Path;
use std::sync::{Arc, Mutex};

use hawser_plan::{ROUTES_MAP_PATH, ROUTES_TWIN_MAP_PATH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;

use super::*;

/// A worker's runtime socket in `dir` that answers map and server
/// commands as HAProxy does and records every command; the API to it.
fn fake_worker(dir: &Path) -> (RuntimeApi, Arc<Mutex<Vec<String>>>) {
    let socket = dir.join("admin.sock");
    let listener = UnixListener::bind(&socket).expect("bind");
    let commands = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&commands);
    tokio::spawn(async move {
        let mut live = ROUTES_MAP_PATH.to_string();
        while let Ok((stream, _)) = listener.accept().await {
            let (read, mut write) = stream.into_split();
            let mut line = String::new();
            BufReader::new(read)
                .read_line(&mut line)
                .await
                .expect("read");
            let line = line.trim_end().to_string();
            // A line of `;`-separated commands is answered command by
            // command, one reply after another, as a worker does.
            let mut reply = String::new();
            for command in line.split(';') {
                reply.push_str(&answer(command, &mut live));
            }
            recorded.lock().unwrap().push(line);
            write.write_all(reply.as_bytes()).await.expect("reply");
        }
    });
    (RuntimeApi::new(socket), commands)
}

/// What a worker answers `command` with, when it succeeds.
fn answer(command: &str, live: &mut String) -> String {
    if command == format!("show map {LIVE_TWINS_MAP_PATH}") {
        format!("0x1 {ROUTES_MAP_PATH} {live}\n\n")
    } else if command.starts_with("wait ") {
        "Done.\n\n".to_string()
    } else if command.starts_with("del server ") {
        "Server deleted.\n\n".to_string()
    } else if command.starts_with("add server ") {
        "New server registered.\n\n".to_string()
    } else {
        if let Some(copy) =
            command.strip_prefix(&format!("set map {LIVE_TWINS_MAP_PATH} {ROUTES_MAP_PATH} "))
        {
            *live = copy.to_string();
        }
        "\n".to_string()
    }
}

/// The commands the worker received for `ops`, applied from no plan.
async fn sent_for(
    api: &RuntimeApi,
    commands: &Mutex<Vec<String>>,
    ops: &[RuntimeOp],
) -> Vec<String> {
    let (files, plan) = (FileSet::default(), Plan::default());
    execute(api, ops, &files, &plan, &mut LiveCopies::default())
        .await
        .expect("applied");
    commands.lock().unwrap().clone()
}

fn routes_added(keys: &[&str]) -> RuntimeOp {
    RuntimeOp::EditTwinMap {
        path: ROUTES_MAP_PATH.to_string(),
        twin: ROUTES_TWIN_MAP_PATH.to_string(),
        edits: keys
            .iter()
            .map(|key| MapEdit::Add {
                key: key.to_string(),
                value: "be_a".to_string(),
            })
            .collect(),
    }
}

/// The copies `add map` went to, in order, from the `from`th session on.
fn edited(commands: &Mutex<Vec<String>>, from: usize) -> Vec<String> {
    commands.lock().unwrap()[from..]
        .iter()
        .flat_map(|line| line.split(';'))
        .filter(|c| c.starts_with("add map"))
        .map(|c| c.split(' ').nth(2).unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn the_copy_read_is_asked_once_and_known_after_until_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let (api, commands) = fake_worker(dir.path());
    let (files, plan) = (FileSet::default(), Plan::default());
    let mut live = LiveCopies::default();
    let shown = |commands: &Mutex<Vec<String>>| {
        let commands = commands.lock().unwrap();
        commands
            .iter()
            .filter(|c| c.starts_with("show map"))
            .count()
    };

    for keys in [
        ["a.example.com/", "b.example.com/"],
        ["c.example.com/", "d.example.com/"],
    ] {
        execute(&api, &[routes_added(&keys)], &files, &plan, &mut live)
            .await
            .expect("applied");
    }
    assert_eq!(shown(&commands), 1, "{:?}", commands.lock().unwrap());
    // Each change is made in the copy not read, which is then read: the
    // second change starts from the copy the first one left read.
    let (twin, routes) = (ROUTES_TWIN_MAP_PATH, ROUTES_MAP_PATH);
    assert_eq!(
        edited(&commands, 0),
        [twin, twin, routes, routes, routes, routes, twin, twin]
    );

    live.forget();
    let before = commands.lock().unwrap().len();
    let one_route = routes_added(&["e.example.com/"]);
    execute(&api, &[one_route], &files, &plan, &mut live)
        .await
        .expect("applied");
    assert_eq!(shown(&commands), 2);
    // One edit is made in the copy read (the second change left the
    // routes copy read), then in the other, with no switch between, in one
    // session: a route added costs one round trip to the worker.
    assert_eq!(edited(&commands, before), [routes, twin]);
    let sessions = commands.lock().unwrap()[before..].to_vec();
    assert_eq!(
        sessions,
        [
            format!("show map {LIVE_TWINS_MAP_PATH}"),
            format!("add map {routes} e.example.com/ be_a;add map {twin} e.example.com/ be_a"),
        ]
    );
    let switched = commands.lock().unwrap()[before..]
        .iter()
        .any(|c| c.starts_with(&format!("set map {LIVE_TWINS_MAP_PATH}")));
    assert!(!switched, "{:?}", commands.lock().unwrap());
}

#[tokio::test]
async fn servers_removed_together_all_leave_traffic_before_any_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (api, commands) = fake_worker(dir.path());
    let removed = |server: &str| RuntimeOp::RemoveServer {
        backend: "be".to_string(),
        server: server.to_string(),
    };
    let ops = [removed("a"), removed("b")];
    let sent = sent_for(&api, &commands, &ops).await;
    assert_eq!(
        sent,
        [
            "set server be/a state maint;set server be/b state maint",
            "wait 5000ms srv-removable be/a",
            "del server be/a",
            "wait 5000ms srv-removable be/b",
            "del server be/b",
        ]
    );
}

#[tokio::test]
async fn an_endpoint_swap_reaches_traffic_in_two_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (api, commands) = fake_worker(dir.path());
    let added = |name: &str, address: &str| RuntimeOp::AddServer {
        backend: "be".to_string(),
        server: ServerPlan {
            name: name.to_string(),
            address: address.to_string(),
            port: 8080,
            weight: 1,
            state: ServerState::Ready,
            resolve: false,
            proto: None,
            keywords: Vec::new(),
        },
    };
    let removed = |server: &str| RuntimeOp::RemoveServer {
        backend: "be".to_string(),
        server: server.to_string(),
    };
    let weighed = RuntimeOp::SetServerWeight {
        backend: "be".to_string(),
        server: "c".to_string(),
        weight: 7,
    };
    let ops = [
        added("d", "10.0.0.4"),
        added("e", "10.0.0.5"),
        weighed,
        removed("a"),
        removed("b"),
    ];
    let sent = sent_for(&api, &commands, &ops).await;
    assert_eq!(
        sent[..2],
        [
            "add server be/d 10.0.0.4:8080 weight 1;enable server be/d;\
             add server be/e 10.0.0.5:8080 weight 1;enable server be/e;\
             set server be/c weight 7",
            "set server be/a state maint;set server be/b state maint",
        ]
    );
    assert_eq!(sent.len(), 6, "{sent:?}");
}
