//! Attach mode (the Kubernetes case): HAProxy is started by someone else on
//! the agent's tree and sockets; the agent stages the bootstrap version for it
//! to boot, waits for its master CLI, applies versions through its sockets,
//! and leaves it running when the agent stops.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use hawser_agent::{Agent, AgentConfig, AgentPaths, ApplyKind, Desired, HaproxyMode};
use hawser_plan::{FileKind, FileSet, Generation, Plan};
use tokio::process::Command;

use crate::common::{TIMEOUT, config_head, free_port, get_body, haproxy};

/// A rendered version answering `body` on `port`.
fn version(paths: &AgentPaths, generation: Generation, port: u16, body: &str) -> Desired {
    let config = format!(
        "{}  http-request return status 200 content-type text/plain string \"{body}\"\n",
        config_head(paths, port)
    );
    let mut files = FileSet::default();
    files.insert("haproxy.cfg", FileKind::Config, config);
    Desired {
        generation,
        files: files.into(),
        plan: Plan {
            structure_digest: body.to_string(),
            ..Plan::default()
        }
        .into(),
    }
}

async fn wait_for(path: &Path) {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while !path.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn attached_agent_drives_an_haproxy_started_by_someone_else() {
    let binary = haproxy();
    let state = tempfile::tempdir().expect("state dir");
    let paths = AgentPaths::new(state.path());
    let mut config = AgentConfig::new(paths.clone(), binary.clone());
    config.mode = HaproxyMode::Attach;
    let agent = tokio::spawn(Agent::start(config));

    // The agent stages the bootstrap version first; "the other container"
    // starts HAProxy on it, as the chart will.
    wait_for(&paths.tree().join("current/haproxy.cfg")).await;
    let mut haproxy = Command::new(binary.path())
        .arg("-W")
        .arg("-S")
        .arg(format!("{},mode,600", paths.master_socket().display()))
        .arg("-C")
        .arg(paths.tree().join("current"))
        .args(["-f", "haproxy.cfg"])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start haproxy");

    let agent = tokio::time::timeout(TIMEOUT, agent)
        .await
        .expect("the agent attaches")
        .expect("agent task")
        .expect("agent starts");
    let handle = agent.handle();
    let mut outcomes = handle.outcomes();
    let port = free_port();
    handle.submit(version(&paths, handle.next_generation(), port, "first"));
    let outcome = tokio::time::timeout(TIMEOUT, outcomes.recv())
        .await
        .expect("an outcome")
        .expect("outcome");
    assert_eq!(outcome.kind, ApplyKind::Reload, "{outcome:?}");
    assert!(get_body(port, "/").await.contains("first"));
    assert!(handle.status().borrow().is_ready());
    let ended = handle.ended();
    tokio::pin!(ended);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), &mut ended)
            .await
            .is_err(),
        "the apply loop runs until the agent stops"
    );

    agent.shutdown().await.expect("shutdown");
    tokio::time::timeout(TIMEOUT, ended)
        .await
        .expect("a handle sees the apply loop end");
    // Attached: stopping the agent leaves HAProxy serving.
    assert!(
        haproxy.try_wait().expect("wait").is_none(),
        "HAProxy must keep running"
    );
    assert!(get_body(port, "/").await.contains("first"));
    haproxy.kill().await.expect("kill haproxy");
}
