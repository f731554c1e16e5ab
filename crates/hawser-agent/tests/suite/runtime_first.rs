//! Runtime first with the full check off the critical path: a runtime-only
//! version is applied through the runtime API before `haproxy -c` runs on
//! its tree, and `current` moves to it only once that check passed. A tree
//! the full check refuses (which the render never produces; here a version
//! crafted so that only `haproxy -c` can see the fault) has its runtime
//! change undone, is reported rejected, and never becomes `current`.
//!
//! Oracle: the answers of the real HAProxy, the worker PID (no reload), the
//! apply outcomes, and where `current` points.

use std::sync::Arc;

use hawser_agent::{Agent, AgentConfig, AgentPaths, ApplyKind, ApplyOutcome, Desired};
use hawser_plan::{
    BackendMode, BackendPlan, FileKind, FileSet, Generation, MapEntry, MapPlan, MatchKind, Plan,
    ServerPlan, ServerState,
};

use crate::common::{TIMEOUT, config_head, free_port, get_body, haproxy};

pub(crate) const MAP: &str = "maps/answers.map";

/// A version answering each path with its value in the answers map.
/// `extra` is appended to haproxy.cfg; the plan's structure digest stays
/// the same, so the agent takes any change of the map as runtime-only.
pub(crate) fn version(
    paths: &AgentPaths,
    generation: Generation,
    port: u16,
    answer: &str,
    extra: &str,
) -> Desired {
    let config = format!(
        "{}  http-request return status 200 content-type text/plain lf-string \"%[path,map({MAP},none)]\"\n{extra}",
        config_head(paths, port)
    );
    let mut files = FileSet::default();
    files.insert("haproxy.cfg", FileKind::Config, config);
    files.insert(MAP, FileKind::Map, format!("/x {answer}\n"));
    Desired {
        generation,
        files: files.into(),
        plan: Plan {
            structure_digest: "one structure".to_string(),
            maps: vec![MapPlan {
                path: MAP.to_string(),
                match_kind: MatchKind::Str,
                entries: vec![MapEntry::new("/x", answer)],
                twin: None,
            }],
            ..Plan::default()
        }
        .into(),
    }
}

pub(crate) async fn outcome(
    outcomes: &mut tokio::sync::broadcast::Receiver<ApplyOutcome>,
) -> ApplyOutcome {
    tokio::time::timeout(TIMEOUT, outcomes.recv())
        .await
        .expect("an outcome in time")
        .expect("outcome")
}

/// An agent that starts HAProxy itself, on a state directory of its own.
pub(crate) async fn start() -> (tempfile::TempDir, AgentPaths, Agent) {
    let state = tempfile::tempdir().expect("state dir");
    let paths = AgentPaths::new(state.path());
    let agent = Agent::start(AgentConfig::new(paths.clone(), haproxy()))
        .await
        .expect("agent starts");
    (state, paths, agent)
}

pub(crate) fn expect_rejected(outcome: ApplyOutcome, mentioning: &str) {
    assert_eq!(outcome.kind, ApplyKind::Rejected, "{outcome:?}");
    assert!(
        outcome
            .error
            .as_deref()
            .is_some_and(|e| e.contains(mentioning)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_runtime_change_whose_tree_the_full_check_refuses_is_undone() {
    let (_state, paths, agent) = start().await;
    let handle = agent.handle();
    let mut outcomes = handle.outcomes();
    let port = free_port();
    let current = || std::fs::read_link(paths.tree().join("current")).expect("current");
    let first = handle.next_generation();

    handle.submit(version(&paths, first, port, "old", ""));
    assert_eq!(outcome(&mut outcomes).await.kind, ApplyKind::Reload);
    assert_eq!(get_body(port, "/x").await, "old");
    let worker = handle.status().borrow().worker_pid;
    let runtime_ops = handle.status().borrow().runtime_ops;
    let serving = current();

    // The policy lets this line through; only `haproxy -c` refuses it.
    let broken = version(
        &paths,
        first.next(),
        port,
        "broken",
        "backend b\n  no-such-keyword\n",
    );
    handle.submit(broken);
    expect_rejected(outcome(&mut outcomes).await, "no-such-keyword");
    assert_eq!(
        handle.status().borrow().runtime_ops,
        runtime_ops + 1,
        "the map was replaced before the full check ran"
    );
    assert_eq!(
        get_body(port, "/x").await,
        "old",
        "the runtime change is undone"
    );
    assert_eq!(current(), serving, "a refused tree never becomes current");
    assert_eq!(handle.status().borrow().worker_pid, worker);

    handle.submit(version(&paths, first.next().next(), port, "new", ""));
    let applied = outcome(&mut outcomes).await;
    assert_eq!(applied.kind, ApplyKind::Runtime, "{applied:?}");
    assert_eq!(get_body(port, "/x").await, "new");
    assert_ne!(current(), serving, "a checked tree becomes current");
    assert_eq!(handle.status().borrow().worker_pid, worker, "no reload");

    agent.shutdown().await.expect("shutdown");
}

fn backend(servers: Vec<ServerPlan>) -> BackendPlan {
    BackendPlan {
        name: "b".to_string(),
        source: "Service app/b port 80".to_string(),
        balance: "roundrobin".to_string(),
        timeout_server: None,
        timeout_connect: None,
        servers,
        mode: BackendMode::Http,
        cookie: None,
        role: Default::default(),
        service: None,
    }
}

#[tokio::test]
async fn a_server_whose_keywords_the_policy_refuses_is_never_sent() {
    let (_state, paths, agent) = start().await;
    let handle = agent.handle();
    let mut outcomes = handle.outcomes();
    let port = free_port();
    let first = handle.next_generation();
    let with_backend = "backend b\n  balance roundrobin\n";

    let mut serving = version(&paths, first, port, "old", with_backend);
    Arc::make_mut(&mut serving.plan).backends = vec![backend(Vec::new()).into()];
    handle.submit(serving);
    assert_eq!(outcome(&mut outcomes).await.kind, ApplyKind::Reload);
    let runtime_ops = handle.status().borrow().runtime_ops;

    // A file outside the tree, which the policy refuses on any line.
    let mut reading = version(&paths, first.next(), port, "old", with_backend);
    Arc::make_mut(&mut reading.plan).backends = vec![
        backend(vec![ServerPlan {
            name: "s1".to_string(),
            address: "127.0.0.1".to_string(),
            port: 9,
            weight: 1,
            state: ServerState::Ready,
            resolve: false,
            proto: None,
            keywords: ["ssl", "ca-file", "/etc/passwd"].map(String::from).to_vec(),
        }])
        .into(),
    ];
    handle.submit(reading);
    expect_rejected(outcome(&mut outcomes).await, "/etc/passwd");
    assert_eq!(
        handle.status().borrow().runtime_ops,
        runtime_ops,
        "nothing was sent"
    );
    agent.shutdown().await.expect("shutdown");
}
