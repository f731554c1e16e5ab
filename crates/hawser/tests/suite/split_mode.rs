//! Split mode: `hawser controller` pushes every render to two `hawser agent`
//! processes, each with its own real HAProxy, over mutual TLS 1.3
//! (fixture `split_mode/`).

use crate::support;

use std::time::{Duration, SystemTime};

use hawser_pki::Role;
use hawser_pki::tls::{SharedMaterial, client_config, load_dir};
use hawser_proto::transport;
use hawser_proto::v1;
use hawser_proto::v1::agent_client::AgentClient;
use support::{AgentProc, Backends, ControllerProc, Manifests, Pki, Vars, pod};

const HOST: &str = "split.example.com";

struct Fleet {
    pki: Pki,
    _backends: Backends,
    manifests: Manifests,
    agents: Vec<AgentProc>,
}

fn start_fleet(agents: usize, agent_args: &[&str]) -> Fleet {
    let backends = Backends::start(&[pod("split", "web", "web-a"), pod("split", "web", "web-b")]);
    let mut vars = Vars::new();
    vars.extend(backends.vars());
    let manifests = Manifests::from_fixture("split_mode", &vars);
    let pki = Pki::bootstrap();
    let agents = (0..agents)
        .map(|_| AgentProc::start_with(&pki.agent_dir(), agent_args))
        .collect();
    Fleet {
        pki,
        _backends: backends,
        manifests,
        agents,
    }
}

impl Fleet {
    fn controller(&self, args: &[&str]) -> ControllerProc {
        let agents: Vec<&AgentProc> = self.agents.iter().collect();
        ControllerProc::start(
            self.manifests.path(),
            &agents,
            &self.pki.controller_dir(),
            args,
        )
    }
}

/// The web.yaml of the fixture with `/app` replaced by `path`.
fn with_route(controller: &ControllerProc, path: &str) -> String {
    controller
        .read_manifest("web.yaml")
        .replace("- path: /app", &format!("- path: {path}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_and_two_agents_converge_on_every_render() {
    let fleet = start_fleet(2, &[]);
    let controller = fleet.controller(&[]);
    controller.wait_converged().await;
    for agent in &fleet.agents {
        agent.expect_status_eventually(HOST, "/app/x", 200).await;
        agent.expect_alive();
    }

    let original = controller.read_manifest("web.yaml");
    for (round, path) in ["/one", "/two", "/three"].iter().enumerate() {
        controller.write_manifest(
            "web.yaml",
            &original.replace("- path: /app", &format!("- path: {path}")),
        );
        let status = controller
            .wait_for_status("the new render", |s| {
                s["controller"]["generation"].as_u64() >= Some(round as u64 + 2)
            })
            .await;
        let generation = status["controller"]["generation"].as_u64().unwrap();
        let converged = controller.wait_converged().await;
        for agent in &fleet.agents {
            agent
                .expect_status_eventually(HOST, &format!("{path}/x"), 200)
                .await;
            agent.expect_status_eventually(HOST, "/app/x", 404).await;
            // Serving that render or a newer one. (The agent's own
            // generation may be older: a render whose files the agent
            // holds already, such as the one for the agents' settings
            // after a start, is not pushed.)
            assert!(
                ControllerProc::agent(&converged, agent)["serving_generation"].as_u64()
                    >= Some(generation),
                "{converged:#}"
            );
        }
    }
    // Route changes are map changes: applied at runtime, no reload.
    let status = controller.status().await;
    for agent in &fleet.agents {
        assert_eq!(
            ControllerProc::agent(&status, agent)["last_outcome"],
            "runtime",
            "{status:#}"
        );
        assert_eq!(
            ControllerProc::agent(&status, agent)["failed_pushes"],
            0,
            "{status:#}"
        );
    }
}

/// Forty more Ingresses to the fixture's Service, one host each: a route
/// map of some size.
fn more_routes() -> String {
    (0..40)
        .map(|i| {
            format!(
                "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: more{i}, namespace: split }}\n\
                 spec:\n  ingressClassName: hawser\n  rules:\n    - host: more{i}.example.com\n      http:\n        paths:\n\
                 \x20         - path: /\n            pathType: Prefix\n            backend: {{ service: {{ name: web, port: {{ name: http }} }} }}\n---\n"
            )
        })
        .collect()
}

/// Only the files the agent lacks travel, and a map that changed travels as
/// the lines that changed: an edit of the map the agent holds, which the
/// agent checks against the map's digest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_missing_files_travel() {
    let fleet = start_fleet(1, &[]);
    let agent = &fleet.agents[0];
    std::fs::write(fleet.manifests.path().join("more.yaml"), more_routes()).unwrap();
    let controller = fleet.controller(&[]);
    let first = controller.wait_converged().await;
    let initial = ControllerProc::agent(&first, agent);
    assert!(initial["last_push_files"].as_u64() >= Some(3), "{first:#}");
    agent
        .expect_status_eventually("more7.example.com", "/", 200)
        .await;

    controller.write_manifest("web.yaml", &with_route(&controller, "/moved"));
    agent.expect_status_eventually(HOST, "/moved/x", 200).await;
    let status = controller.wait_converged().await;
    let entry = ControllerProc::agent(&status, agent);
    let map = String::from_utf8(agent.served_file("maps/routes.map")).unwrap();
    assert!(map.lines().count() > 40, "{map}");
    assert_eq!(entry["last_push_files"], 1, "one map changed: {status:#}");
    let bytes = entry["last_push_bytes"].as_u64().unwrap();
    let moved = map
        .lines()
        .find(|line| line.starts_with("split.example.com/moved"))
        .unwrap();
    assert!(
        bytes > moved.len() as u64 && bytes < map.len() as u64 / 10,
        "the changed lines of the map travel, {bytes} bytes of {}: {status:#}",
        map.len()
    );
    assert_eq!(
        entry["bytes_sent"].as_u64(),
        Some(initial["bytes_sent"].as_u64().unwrap() + bytes),
        "{status:#}"
    );
    // The same figures on /metrics, and the identity's remaining lifetime.
    let total = entry["bytes_sent"].as_u64().unwrap() as f64;
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    while controller.metric("hawser_push_bytes_total").await != Some(total) {
        assert!(
            std::time::Instant::now() < deadline,
            "hawser_push_bytes_total never reached {total}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        controller.metric("hawser_agents_converged").await,
        Some(1.0)
    );
    // Every push's time was observed.
    let pushes = controller.metric("hawser_pushes_total").await.unwrap();
    assert_eq!(
        controller
            .metric("hawser_push_duration_seconds_count")
            .await,
        Some(pushes)
    );
    let expiry = controller
        .metric("hawser_certificate_expiry_seconds")
        .await
        .unwrap();
    assert!(expiry > 300.0 * 86_400.0, "{expiry}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_restarted_mid_push_converges() {
    // Reloads wait 3 s for their slot, so a push that needs one is in flight
    // long enough to kill the agent in the middle of it.
    let mut fleet = start_fleet(1, &["--min-reload-interval-ms", "3000"]);
    let controller = fleet.controller(&[]);
    controller.wait_converged().await;

    // A second Service is a new backend: a reload.
    let extra = controller
        .read_manifest("web.yaml")
        .replace(
            "name: web, namespace: split",
            "name: web2, namespace: split",
        )
        .replace("name: web-1", "name: web2-1")
        .replace(
            "kubernetes.io/service-name: web }",
            "kubernetes.io/service-name: web2 }",
        )
        .replace("name: web }", "name: web2 }")
        .replace("host: split.example.com", "host: two.split.example.com")
        .replace("service: { name: web,", "service: { name: web2,");
    controller.write_manifest("web2.yaml", &extra);
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    loop {
        let state = fleet.agents[0].state();
        if state["desiredGeneration"].as_u64() > state["appliedGeneration"].as_u64() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never accepted the push: {state:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fleet.agents[0].kill9();
    fleet.agents[0].spawn();
    fleet.agents[0].wait_alive().await;

    controller.wait_converged().await;
    fleet.agents[0]
        .expect_status_eventually("two.split.example.com", "/app/x", 200)
        .await;
    fleet.agents[0]
        .expect_status_eventually(HOST, "/app/x", 200)
        .await;
}

/// A client as the controller would be, for sending hand-made Apply calls.
async fn direct_client(pki: &Pki, agent: &AgentProc) -> AgentClient<tonic::transport::Channel> {
    let material = load_dir(&pki.controller_dir(), Role::Controller, SystemTime::now())
        .expect("the controller identity loads");
    let tls = client_config(SharedMaterial::with(material), "hawser-agent".into());
    let connection = transport::connect(agent.listen, "hawser-agent", tls, Duration::from_secs(5))
        .await
        .expect("connects");
    AgentClient::new(connection.channel)
}

/// A hand-made push of one whole version (`haproxy.cfg` holding only
/// `global`, and `plan` as the plan's bytes), every file and the plan sent,
/// on top of what the agent says it holds; the agent's answer.
async fn push_whole(
    client: &mut AgentClient<tonic::transport::Channel>,
    epoch: u64,
    controller: &str,
    plan: &[u8],
    plan_format: u32,
) -> v1::ApplyResult {
    let state = client
        .get_state(v1::StateRequest {})
        .await
        .unwrap()
        .into_inner();
    let digest = |c: &[u8]| {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(c))
    };
    let config = b"global\n".to_vec();
    let response = client
        .apply(v1::ApplyRequest {
            epoch,
            expected_generation: state.desired_generation,
            generation: state.desired_generation + 1,
            files: vec![v1::FileEntry {
                path: "haproxy.cfg".into(),
                digest: digest(&config),
                kind: "config".into(),
            }],
            plan_digest: digest(plan),
            blobs: vec![
                v1::Blob {
                    digest: digest(&config),
                    content: config.clone(),
                },
                v1::Blob {
                    digest: digest(plan),
                    content: plan.to_vec(),
                },
            ],
            controller: controller.into(),
            plan_format,
            edits: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    response.result.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_in_a_format_the_agent_does_not_read_is_refused_naming_both() {
    let fleet = start_fleet(1, &[]);
    let agent = &fleet.agents[0];
    let leader = fleet.controller(&["--epoch", "5"]);
    leader.wait_converged().await;
    drop(leader);
    let before = agent.state();

    // A hand-made push from the current leader epoch, whole, in a plan
    // format from the future.
    let mut client = direct_client(&fleet.pki, agent).await;
    let result = push_whole(
        &mut client,
        5,
        "from the future",
        b"a plan in format 99",
        99,
    )
    .await;
    assert_eq!(result.outcome(), v1::Outcome::Rejected, "{result:?}");
    assert!(
        result.message.contains(&format!(
            "plan format 99 is not one this agent reads (it reads formats up to {})",
            hawser_plan::PLAN_FORMAT
        )),
        "{result:?}"
    );
    let after = agent.state();
    for field in ["desiredGeneration", "appliedGeneration", "planDigest"] {
        assert_eq!(before[field], after[field], "{field} changed: {after:#}");
    }
    agent.expect_status_eventually(HOST, "/app/x", 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_epoch_push_is_refused_and_changes_nothing() {
    let fleet = start_fleet(1, &[]);
    let agent = &fleet.agents[0];
    let leader = fleet.controller(&["--epoch", "5"]);
    leader.wait_converged().await;
    drop(leader);
    let before = agent.state();
    assert_eq!(before["epoch"], 5, "{before:#}");
    let versions_before = std::fs::read_dir(agent.state_dir().join("tree"))
        .unwrap()
        .count();

    // A hand-made push from epoch 4, whole (every file and the plan sent).
    let mut client = direct_client(&fleet.pki, agent).await;
    let result = push_whole(&mut client, 4, "deposed", b"{}", 1).await;
    assert_eq!(result.outcome(), v1::Outcome::StaleEpoch, "{result:?}");
    assert!(
        result.message.contains("epoch 4 is older than 5"),
        "{result:?}"
    );

    // A stale baseline is refused the same way.
    let state = client
        .get_state(v1::StateRequest {})
        .await
        .unwrap()
        .into_inner();
    let response = client
        .apply(v1::ApplyRequest {
            epoch: 5,
            expected_generation: state.desired_generation + 7,
            generation: state.desired_generation + 8,
            files: Vec::new(),
            plan_digest: {
                use sha2::Digest as _;
                hex::encode(sha2::Sha256::digest(b"{}"))
            },
            blobs: Vec::new(),
            controller: "confused".into(),
            plan_format: 1,
            edits: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response.result.unwrap().outcome(),
        v1::Outcome::BaselineMismatch
    );

    let after = agent.state();
    for field in [
        "epoch",
        "desiredGeneration",
        "appliedGeneration",
        "planDigest",
    ] {
        assert_eq!(before[field], after[field], "{field} changed: {after:#}");
    }
    assert_eq!(
        std::fs::read_dir(agent.state_dir().join("tree"))
            .unwrap()
            .count(),
        versions_before,
        "nothing was written"
    );
    agent.expect_status_eventually(HOST, "/app/x", 200).await;

    // A controller of the old epoch does not push at all, and says why.
    let deposed = fleet.controller(&["--epoch", "4"]);
    deposed
        .wait_for_status("the deposed controller reporting the newer leader", |s| {
            ControllerProc::agent(s, agent)["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("another controller leads"))
        })
        .await;
    assert_eq!(
        ControllerProc::agent(&deposed.status().await, agent)["pushes"],
        0
    );
}
