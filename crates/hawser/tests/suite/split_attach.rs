//! `hawser agent` attached to an HAProxy started beside it, as in a pod:
//! the agent answers its local socket (the pod's startup probe) before
//! HAProxy exists, stages the bootstrap version HAProxy boots on, and then
//! serves what the controller pushes.

use crate::support::{AgentProc, Backends, ControllerProc, Manifests, Pki, Vars, pod};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_agent_answers_before_haproxy_starts_then_serves_pushes() {
    let backends = Backends::start(&[pod("split", "web", "web-a"), pod("split", "web", "web-b")]);
    let mut vars = Vars::new();
    vars.extend(backends.vars());
    let manifests = Manifests::from_fixture("split_mode", &vars);
    let pki = Pki::bootstrap();
    let mut agent = AgentProc::attach(&pki.agent_dir());
    agent.wait_alive().await;
    let health = agent.health();
    assert!(
        health.stdout.contains("phase=starting"),
        "{}",
        health.describe()
    );
    assert!(
        agent.state_dir().join("tree/current/haproxy.cfg").exists(),
        "the bootstrap version is staged before HAProxy starts"
    );

    agent.start_haproxy();
    let controller = ControllerProc::start(manifests.path(), &[&agent], &pki.controller_dir(), &[]);
    controller.wait_converged().await;
    agent
        .expect_status_eventually("split.example.com", "/app/x", 200)
        .await;
    let health = agent.health();
    assert!(
        health.stdout.contains("phase=serving"),
        "{}",
        health.describe()
    );
}
