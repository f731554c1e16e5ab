//! Agent discovery against the fake API server, with the real kube-rs
//! watcher.

use std::time::Duration;

use hawser_fake_api::FakeApi;
use k8s_openapi::api::core::v1 as core;
use serde_json::json;
use tokio::sync::{oneshot, watch};

use super::*;

const PATIENCE: Duration = Duration::from_secs(30);

fn pod(name: &str, ip: Option<&str>, ready: bool) -> core::Pod {
    let mut status = json!({
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
    });
    if let Some(ip) = ip {
        status["podIP"] = json!(ip);
    }
    serde_json::from_value(json!({
        "metadata": {
            "name": name, "namespace": "hawser",
            "labels": {"app.kubernetes.io/component": "haproxy"},
        },
        "status": status,
    }))
    .unwrap()
}

async fn agents_become(targets: &mut watch::Receiver<Vec<AgentTarget>>, expected: &[&str]) {
    let expected: Vec<AgentTarget> = expected
        .iter()
        .map(|a| AgentTarget {
            addr: a.parse().unwrap(),
        })
        .collect();
    let seen = tokio::time::timeout(PATIENCE, targets.wait_for(|t| *t == expected))
        .await
        .is_ok();
    assert!(
        seen,
        "agents stayed {:?}, expected {expected:?}",
        *targets.borrow()
    );
}

#[tokio::test]
async fn ready_pods_become_agents_and_leave_when_not_ready_or_deleted() {
    let (fake, client) = FakeApi::start();
    fake.apply(&pod("h-1", Some("10.1.0.1"), true));
    fake.apply(&pod("h-2", Some("10.1.0.2"), false));
    fake.apply(&pod("h-3", None, true));
    let mut other = pod("other", Some("10.1.0.9"), true);
    other.metadata.labels = None;
    fake.apply(&other);

    let (targets_tx, mut targets) = watch::channel(Vec::new());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(discover_agents(
        client,
        watch::channel(AgentDiscovery {
            namespace: "hawser".into(),
            label_selector: "app.kubernetes.io/component=haproxy".into(),
            agent_port: 7443,
        })
        .1,
        targets_tx,
        async move {
            let _ = stopped.await;
        },
    ));
    agents_become(&mut targets, &["10.1.0.1:7443"]).await;

    fake.apply(&pod("h-2", Some("10.1.0.2"), true));
    agents_become(&mut targets, &["10.1.0.1:7443", "10.1.0.2:7443"]).await;
    fake.apply(&pod("h-3", Some("10.1.0.3"), true));
    agents_become(
        &mut targets,
        &["10.1.0.1:7443", "10.1.0.2:7443", "10.1.0.3:7443"],
    )
    .await;

    fake.apply(&pod("h-1", Some("10.1.0.1"), false));
    agents_become(&mut targets, &["10.1.0.2:7443", "10.1.0.3:7443"]).await;
    fake.delete::<core::Pod>("hawser", "h-2");
    agents_become(&mut targets, &["10.1.0.3:7443"]).await;

    // A terminating pod is no target, Ready or not.
    let mut terminating = pod("h-3", Some("10.1.0.3"), true);
    terminating.metadata.finalizers = Some(vec!["hawser.dev/drain".into()]);
    fake.apply(&terminating);
    fake.delete::<core::Pod>("hawser", "h-3");
    agents_become(&mut targets, &[]).await;

    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
}

#[tokio::test]
async fn discovery_survives_a_gone_relist() {
    let (fake, client) = FakeApi::start();
    fake.apply(&pod("h-1", Some("10.1.0.1"), true));
    let (targets_tx, mut targets) = watch::channel(Vec::new());
    let task = tokio::spawn(discover_agents(
        client,
        watch::channel(AgentDiscovery {
            namespace: "hawser".into(),
            label_selector: String::new(),
            agent_port: 7443,
        })
        .1,
        targets_tx,
        std::future::pending(),
    ));
    agents_become(&mut targets, &["10.1.0.1:7443"]).await;
    fake.break_watches();
    fake.delete::<core::Pod>("hawser", "h-1");
    fake.apply(&pod("h-2", Some("10.1.0.2"), true));
    fake.compact();
    agents_become(&mut targets, &["10.1.0.2:7443"]).await;
    task.abort();
}

#[tokio::test]
async fn a_new_selection_watches_again_and_keeps_the_old_agents_until_it_has_listed() {
    let (fake, client) = FakeApi::start();
    fake.apply(&pod("h-1", Some("10.1.0.1"), true));
    let mut canary = pod("canary", Some("10.1.0.7"), true);
    canary.metadata.labels = Some([("track".to_string(), "canary".to_string())].into());
    fake.apply(&canary);
    let selection = |label_selector: &str, agent_port| AgentDiscovery {
        namespace: "hawser".into(),
        label_selector: label_selector.into(),
        agent_port,
    };
    let (discovery_tx, discovery) =
        watch::channel(selection("app.kubernetes.io/component=haproxy", 7443));
    let (targets_tx, mut targets) = watch::channel(Vec::new());
    let task = tokio::spawn(discover_agents(
        client,
        discovery,
        targets_tx,
        std::future::pending(),
    ));
    agents_become(&mut targets, &["10.1.0.1:7443"]).await;

    discovery_tx.send_replace(selection("track=canary", 7444));
    agents_become(&mut targets, &["10.1.0.7:7444"]).await;
    // Unchanged selection: no new watch (one per selection so far).
    discovery_tx.send_replace(selection("track=canary", 7444));
    fake.apply(&pod("h-2", Some("10.1.0.2"), true));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(targets.borrow().len(), 1);
    task.abort();
}
