//! `hawser controller --kubernetes` as a whole process: it reads the
//! cluster from an API server (the fake one, over HTTP through a
//! kubeconfig), discovers the agent from its pod, leads, pushes over mutual
//! TLS to a real agent and HAProxy, writes Ingress and Gateway API status,
//! and follows HawserConfig changes while it runs (fixture `cluster_mode/`).

use crate::support;

use std::time::{Duration, Instant};

use hawser_crd::HawserConfig;
use hawser_fake_api::FakeApi;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;
use kube::Resource;
use kube::api::ApiResource;
use serde_json::{Value, json};
use support::{AgentProc, Backends, ControllerProc, Manifests, Pki, TIMEOUT, pod};

const HOST: &str = "cluster.example.com";

struct Cluster {
    fake: FakeApi,
    _backends: Backends,
    _kubeconfig: tempfile::NamedTempFile,
    agent: AgentProc,
    controller: ControllerProc,
    _pki: Pki,
}

/// The fixture's objects in the fake API server (then `prepare` changes
/// them), one agent, and the controller reading that server.
async fn start_cluster(prepare: impl FnOnce(&FakeApi, &AgentProc)) -> Cluster {
    let backends = Backends::start(&[pod("app", "web", "web-a")]);
    let pki = Pki::bootstrap();
    let agent = AgentProc::start(&pki.agent_dir());
    let mut vars = backends.vars();
    vars.insert("AGENT_IP".into(), agent.listen.ip().to_string());
    vars.insert("AGENT_PORT".into(), agent.listen.port().to_string());
    let manifests = Manifests::from_fixture("cluster_mode", &vars);
    let (fake, addr) = FakeApi::start_http().await;
    let text = std::fs::read_to_string(manifests.path().join("cluster.yaml")).unwrap();
    for object in serde_saphyr::from_multiple::<Value>(&text).unwrap() {
        apply(&fake, object);
    }
    prepare(&fake, &agent);
    let kubeconfig = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(kubeconfig.path(), FakeApi::kubeconfig(addr, "hawser")).unwrap();
    let controller = ControllerProc::cluster(
        kubeconfig.path(),
        &pki.controller_dir(),
        &[
            "--namespace",
            "hawser",
            "--identity",
            "hawser-controller-0",
            "--publish-service",
            "hawser/haproxy",
        ],
    );
    Cluster {
        fake,
        _backends: backends,
        _kubeconfig: kubeconfig,
        agent,
        controller,
        _pki: pki,
    }
}

fn resource_of<K: Resource<DynamicType = ()>>() -> ApiResource {
    ApiResource::erase::<K>(&())
}

fn apply(fake: &FakeApi, object: Value) {
    let resource = match object["kind"].as_str().unwrap() {
        "IngressClass" => resource_of::<networking::IngressClass>(),
        "Ingress" => resource_of::<networking::Ingress>(),
        "Service" => resource_of::<core::Service>(),
        "Pod" => resource_of::<core::Pod>(),
        "EndpointSlice" => resource_of::<discovery::EndpointSlice>(),
        "HawserConfig" => resource_of::<HawserConfig>(),
        other => panic!("the fixture has a {other} this test does not apply"),
    };
    fake.apply_dynamic(&resource, object);
}

/// The fixture's HawserConfig with `snippet` in the frontend and `settings`.
fn hawser_config(agent: &AgentProc, snippet: &str, settings: Value) -> Value {
    with_tests(agent, snippet, settings, json!([]))
}

fn with_tests(agent: &AgentProc, snippet: &str, settings: Value, tests: Value) -> Value {
    json!({
        "apiVersion": "hawser.dev/v1alpha1", "kind": "HawserConfig",
        "metadata": {"name": "hawser", "namespace": "hawser"},
        "spec": {
            "agents": {
                "selector": "app.kubernetes.io/component=haproxy",
                "port": agent.listen.port(),
            },
            "settings": settings,
            "templates": {"snippets": {"frontend-tag": format!("  {snippet}")}},
            "tests": tests,
        },
    })
}

/// A spec tagged `tag` whose one test expects `status` from Service app/web.
fn tested(agent: &AgentProc, tag: &str, status: u16) -> Value {
    let snippet = format!("http-response set-header X-Hawser-Config {tag}");
    let tests = json!([{
        "name": "storefront",
        "request": {"host": HOST, "path": "/"},
        "expect": {"status": status, "service": "app/web"},
    }]);
    with_tests(agent, &snippet, json!({}), tests)
}

fn tagged(agent: &AgentProc, tag: &str) -> Value {
    let snippet = format!("http-response set-header X-Hawser-Config {tag}");
    hawser_config(agent, &snippet, json!({}))
}

/// A spec that does not render: its connect timeout is no duration.
fn broken(agent: &AgentProc) -> Value {
    hawser_config(agent, "", json!({"timeouts": {"connect": "soon"}}))
}

impl Cluster {
    /// Waits until the served answer for `HOST` satisfies `check`.
    async fn expect_served(&self, what: &str, check: impl Fn(&support::Response) -> bool) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let response = self.agent.get(HOST, "/").await;
            if check(&response) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "never served {what}; last answer {} {:?}\ncontroller:\n{}\nagent:\n{}",
                response.status,
                response.headers,
                self.controller.output(),
                self.agent.output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn valid_condition(&self) -> Option<(String, String, String)> {
        let config = self.fake.get::<HawserConfig>("hawser", "hawser")?;
        let condition = config.status?.conditions.pop()?;
        Some((condition.status, condition.reason, condition.message))
    }

    async fn expect_valid(&self, status: &str, reason: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some((s, r, message)) = self.valid_condition()
                && s == status
                && r == reason
            {
                return message;
            }
            assert!(
                Instant::now() < deadline,
                "Valid never became {status}/{reason}: {:?}\n{}",
                self.valid_condition(),
                self.controller.output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test]
async fn the_controller_serves_a_cluster_and_follows_its_hawser_config() {
    let cluster = start_cluster(|_, _| {}).await;

    // Discovered, led, rendered and pushed: the Ingress is served.
    cluster.agent.expect_status_eventually(HOST, "/", 200).await;
    let echo = cluster.agent.get(HOST, "/").await.echo();
    assert_eq!(
        (echo.namespace.as_str(), echo.service.as_str()),
        ("app", "web")
    );
    cluster.expect_valid("True", "Rendered").await;
    assert_eq!(cluster.controller.metric("hawser_leader").await, Some(1.0));

    // Ingress status carries the HAProxy Service's address.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let ingress = cluster
            .fake
            .get::<networking::Ingress>("app", "web")
            .unwrap();
        let ip = ingress
            .status
            .and_then(|s| s.load_balancer)
            .and_then(|lb| lb.ingress)
            .and_then(|i| i.first().and_then(|i| i.ip.clone()));
        if ip.as_deref() == Some("203.0.113.10") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Ingress status never written: {ip:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A HawserConfig change is rendered and pushed with no restart.
    apply(&cluster.fake, tagged(&cluster.agent, "v2"));
    cluster
        .expect_served("the new snippet", |r| {
            r.header("x-hawser-config") == Some("v2")
        })
        .await;

    // A spec that does not render is refused; the last valid one serves on.
    apply(&cluster.fake, broken(&cluster.agent));
    let message = cluster.expect_valid("False", "InvalidSpec").await;
    assert!(message.contains("connect"), "{message}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let served = cluster.agent.get(HOST, "/").await;
    assert_eq!(served.header("x-hawser-config"), Some("v2"));

    // Fixed, it is applied.
    apply(&cluster.fake, tagged(&cluster.agent, "v4"));
    cluster
        .expect_served("the fixed spec", |r| {
            r.header("x-hawser-config") == Some("v4")
        })
        .await;
    cluster.expect_valid("True", "Rendered").await;

    // Its tests run against the cluster's objects with a real HAProxy: a
    // spec whose test fails is refused, naming the test.
    apply(&cluster.fake, tested(&cluster.agent, "v5", 418));
    let message = cluster.expect_valid("False", "TestFailed").await;
    assert!(
        message.contains("storefront") && message.contains("418") && message.contains("200"),
        "{message}"
    );
    let served = cluster.agent.get(HOST, "/").await;
    assert_eq!(served.header("x-hawser-config"), Some("v4"));
    apply(&cluster.fake, tested(&cluster.agent, "v6", 200));
    cluster
        .expect_served("the tested spec", |r| {
            r.header("x-hawser-config") == Some("v6")
        })
        .await;
    cluster.expect_valid("True", "Rendered").await;
}

#[tokio::test]
async fn a_controller_started_on_a_spec_that_does_not_render_waits_for_a_valid_one() {
    let cluster = start_cluster(|fake, agent| apply(fake, broken(agent))).await;
    let message = cluster.expect_valid("False", "InvalidSpec").await;
    assert!(message.contains("connect"), "{message}");
    // Alive, and nothing rendered or pushed, well past the debounce: the
    // agent's HAProxy still runs its bootstrap configuration.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let status = cluster.controller.status().await;
    assert!(status["controller"]["generation"].is_null(), "{status}");
    let pushes: u64 = status["fleet"]["agents"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, a)| a["pushes"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(pushes, 0, "{status}");

    apply(&cluster.fake, tagged(&cluster.agent, "v1"));
    cluster.agent.expect_status_eventually(HOST, "/", 200).await;
    cluster
        .expect_served("the valid spec", |r| {
            r.header("x-hawser-config") == Some("v1")
        })
        .await;
    cluster.expect_valid("True", "Rendered").await;
}

fn gateway_api(kind: &str, plural: &str) -> ApiResource {
    let gvk = kube::api::GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", kind);
    ApiResource::from_gvk_with_plural(&gvk, plural)
}

/// The Gateway API side: with TCPRoute's CRD missing the Ingress is still
/// served, and the leader writes the status of the class, the Gateway (
/// programmed once the agent serves it, with the publish Service's address)
/// and the route (keeping another controller's entry).
#[tokio::test]
async fn the_leader_writes_gateway_api_status_and_a_missing_crd_blocks_nothing() {
    let cluster = start_cluster(|fake, _| {
        fake.unserve("gateway.networking.k8s.io/v1alpha2", "tcproutes");
        let v1 = "gateway.networking.k8s.io/v1";
        fake.apply_dynamic(
            &gateway_api("GatewayClass", "gatewayclasses"),
            json!({
                "apiVersion": v1, "kind": "GatewayClass", "metadata": {"name": "hawser"},
                "spec": {"controllerName": "hawser.dev/gateway-controller"},
            }),
        );
        fake.apply_dynamic(
            &gateway_api("Gateway", "gateways"),
            json!({
                "apiVersion": v1, "kind": "Gateway",
                "metadata": {"name": "edge", "namespace": "app"},
                "spec": {"gatewayClassName": "hawser", "listeners": [
                    {"name": "http", "port": 80, "protocol": "HTTP"},
                ]},
            }),
        );
        fake.apply_dynamic(
            &gateway_api("HTTPRoute", "httproutes"),
            json!({
                "apiVersion": v1, "kind": "HTTPRoute",
                "metadata": {"name": "web", "namespace": "app"},
                "spec": {
                    "parentRefs": [{"name": "edge"}],
                    // Its own host: the Ingress's host stays the Ingress's.
                    "hostnames": ["gateway.example.com"],
                    "rules": [{"backendRefs": [{"name": "nosuch", "port": 80}]}],
                },
                "status": {"parents": [{
                    "parentRef": {"name": "mesh"},
                    "controllerName": "example.com/mesh",
                    "conditions": [],
                }]},
            }),
        );
    })
    .await;
    cluster.agent.expect_status_eventually(HOST, "/", 200).await;
    // The route is served too: its backend does not exist, so it answers 500.
    cluster
        .agent
        .expect_status_eventually("gateway.example.com", "/", 500)
        .await;

    let routes = gateway_api("HTTPRoute", "httproutes");
    let deadline = Instant::now() + TIMEOUT;
    let parents = loop {
        let route = cluster.fake.get_dynamic(&routes, "app", "web").unwrap();
        let parents = route["status"]["parents"].clone();
        if parents.as_array().is_some_and(|p| p.len() == 2) {
            break parents;
        }
        assert!(
            Instant::now() < deadline,
            "the route's status was never written: {parents}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(parents[0]["controllerName"], "example.com/mesh");
    let ours = &parents[1];
    assert_eq!(ours["controllerName"], "hawser.dev/gateway-controller");
    let resolved = ours["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "ResolvedRefs")
        .unwrap();
    assert_eq!(
        (resolved["status"].as_str(), resolved["reason"].as_str()),
        (Some("False"), Some("BackendNotFound"))
    );

    // The agent serves the Gateway: Programmed, on the HAProxy Service's address.
    let gateways = gateway_api("Gateway", "gateways");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let status = cluster.fake.get_dynamic(&gateways, "app", "edge").unwrap()["status"].clone();
        let programmed = status["conditions"]
            .as_array()
            .and_then(|all| all.iter().find(|c| c["type"] == "Programmed"))
            .map(|c| c["status"].clone());
        if programmed == Some(json!("True"))
            && status["addresses"] == json!([{"type": "IPAddress", "value": "203.0.113.10"}])
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the Gateway never became Programmed with its address: {status:#}\n{}",
            cluster.controller.output()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
