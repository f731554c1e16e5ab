//! Fleet membership: links start and stop as agents come and go.

use std::sync::Arc;
use std::time::Duration;

use hawser_render::{RenderConfig, Renderer, generate_default_certificate};
use tokio::sync::watch;

use super::*;

fn target(addr: &str) -> AgentTarget {
    AgentTarget {
        addr: addr.parse().unwrap(),
    }
}

/// A fleet whose agents are unreachable (nothing listens on port 1).
fn fleet(agents: &[&str]) -> Fleet {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let (_revision_tx, revision) = watch::channel("test".to_string());
    Fleet::start(FleetConfig {
        agents: agents.iter().map(|a| target(a)).collect(),
        tls: ClientTls {
            config: Arc::new(config),
            agent_name: "agent".into(),
            revision,
            recheck: Arc::new(|_| Ok(())),
        },
        render: RenderConfig::default(),
        default_certificate: generate_default_certificate().unwrap(),
        leader: watch::channel(Some(1)).1,
        controller: "test".into(),
        retry: Duration::from_millis(20),
    })
    .unwrap()
}

fn members(fleet: &Fleet) -> Vec<String> {
    fleet.status().borrow().agents.keys().cloned().collect()
}

async fn members_become(fleet: &Fleet, expected: &[&str]) {
    let mut status = fleet.status();
    let seen = tokio::time::timeout(
        Duration::from_secs(10),
        status.wait_for(|s| {
            s.agents
                .keys()
                .map(String::as_str)
                .eq(expected.iter().copied())
        }),
    )
    .await;
    assert!(seen.is_ok(), "members stayed {:?}", members(fleet));
}

#[tokio::test]
async fn set_agents_starts_and_stops_links() {
    let fleet = fleet(&["127.0.0.1:1"]);
    assert_eq!(members(&fleet), ["127.0.0.1:1"]);

    fleet.set_agents(&[target("127.0.0.1:1"), target("127.0.0.2:1")]);
    assert_eq!(members(&fleet), ["127.0.0.1:1", "127.0.0.2:1"]);
    // The new link runs: it tried the agent and says why it failed.
    let mut status = fleet.status();
    let tried = |s: &FleetStatus| {
        s.agents["127.0.0.2:1"]
            .last_error
            .as_ref()
            .is_some_and(|e| e.contains("cannot reach agent 127.0.0.2:1"))
    };
    tokio::time::timeout(Duration::from_secs(10), status.wait_for(tried))
        .await
        .unwrap()
        .unwrap();

    fleet.set_agents(&[target("127.0.0.2:1")]);
    assert_eq!(members(&fleet), ["127.0.0.2:1"]);
    // The stopped link does not come back to its entry.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(members(&fleet), ["127.0.0.2:1"]);
    fleet.stop().await;
}

#[tokio::test]
async fn follow_agents_tracks_discovery() {
    let fleet = fleet(&[]);
    let (targets_tx, targets) = watch::channel(vec![target("127.0.0.3:1")]);
    fleet.follow_agents(targets);
    members_become(&fleet, &["127.0.0.3:1"]).await;
    targets_tx.send_replace(vec![target("127.0.0.4:1"), target("127.0.0.5:1")]);
    members_become(&fleet, &["127.0.0.4:1", "127.0.0.5:1"]).await;
    targets_tx.send_replace(Vec::new());
    members_become(&fleet, &[]).await;
    tokio::time::timeout(Duration::from_secs(10), fleet.stop())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_served_ingresses_are_made_when_first_asked_not_when_delivered() {
    let store = Arc::new(crate::test_store::store_of(
        r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: hawser }
spec: { controller: hawser.dev/ingress-controller }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: a, namespace: app }
spec:
  ingressClassName: hawser
  rules:
    - host: a.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: other, namespace: app }
spec: { ingressClassName: nginx, defaultBackend: { service: { name: web, port: { number: 80 } } } }
"#,
    ));
    let rendered = Renderer::new(RenderConfig::default())
        .unwrap()
        .render(&store)
        .unwrap();
    let fleet = fleet(&[]);
    let sink = fleet.sink();
    let mut delivered = sink.subscribe();
    sink.deliver(&CycleRender {
        generation: hawser_plan::Generation::new(1),
        store,
        config: Arc::clone(&rendered.config),
        rendered: Arc::new(rendered),
    });
    let snapshot = delivered.borrow_and_update().clone().expect("delivered");
    assert!(snapshot.served.get().is_none(), "made before a push");
    assert_eq!(*snapshot.served(), [ObjectKey::new("app", "a")].into());
    fleet.stop().await;
}
