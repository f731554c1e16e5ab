//! The Gateway API kinds against the fake API server: watched into the
//! store, a kind whose CRD is missing blocks nothing, and the status writer
//! writes once per real change, as the leader only, keeping other
//! controllers' route parents.

use ::kube::api::{Api, ApiResource, DynamicObject};

use super::*;
use crate::cluster::watch::gateway_api_resource;

pub(super) const V1: &str = "gateway.networking.k8s.io/v1";

pub(super) fn resource(kind: Kind) -> ApiResource {
    gateway_api_resource(kind).unwrap()
}

/// A GatewayClass of hawser's, a Gateway `app/edge` with one HTTP listener
/// for routes from namespaces labelled `team=web`, and namespace `app`.
pub(super) fn apply_gateway(fake: &FakeApi) {
    fake.apply::<core::Namespace>(&object(json!({
        "metadata": {"name": "app", "labels": {"team": "web"}},
    })));
    fake.apply_dynamic(
        &resource(Kind::GatewayClass),
        json!({
            "apiVersion": V1, "kind": "GatewayClass",
            "metadata": {"name": "hawser"},
            "spec": {"controllerName": "hawser.dev/gateway-controller"},
        }),
    );
    fake.apply_dynamic(
        &resource(Kind::Gateway),
        json!({
            "apiVersion": V1, "kind": "Gateway",
            "metadata": {"name": "edge", "namespace": "app"},
            "spec": {
                "gatewayClassName": "hawser",
                "listeners": [{
                    "name": "http", "port": 80, "protocol": "HTTP",
                    "allowedRoutes": {"namespaces": {
                        "from": "Selector",
                        "selector": {"matchLabels": {"team": "web"}},
                    }},
                }],
            },
        }),
    );
}

/// HTTPRoute `app/web` to Service `web`, naming `section` of Gateway
/// `edge`; its status holds an entry of another controller's.
pub(super) fn apply_route(fake: &FakeApi, section: &str) {
    fake.apply_dynamic(
        &resource(Kind::HttpRoute),
        json!({
            "apiVersion": V1, "kind": "HTTPRoute",
            "metadata": {"name": "web", "namespace": "app"},
            "spec": {
                "parentRefs": [{"name": "edge", "sectionName": section}],
                "rules": [{"backendRefs": [{"name": "web", "port": 80}]}],
            },
            "status": {"parents": [{
                "parentRef": {"name": "mesh", "kind": "Service", "group": ""},
                "controllerName": "example.com/mesh",
                "conditions": [],
            }]},
        }),
    );
}

/// Waits until the source renders a store that satisfies `check`
/// (delivered or not: a render equal to the last is not delivered).
pub(super) async fn rendered_where(source: &Source, check: impl Fn(&Store) -> bool) {
    let mut stores = source.stores.clone();
    tokio::time::timeout(
        PATIENCE,
        stores.wait_for(|s| s.as_ref().is_some_and(|r| check(&r.store))),
    )
    .await
    .expect("no such store was rendered in time")
    .expect("the source stopped");
}

/// Changes Ingress `a`, so that a render is delivered.
pub(super) fn nudge(fake: &FakeApi, n: u32) {
    fake.apply(&ingress("a", &format!("n{n}.example.com"), None));
}

fn route_section(store: &Store) -> Option<String> {
    store
        .http_routes()
        .next()
        .and_then(|r| r.meta.parent_refs.first())
        .and_then(|p| p.section_name.clone())
}

/// A fleet whose agents serve these generations (`None`: nothing yet).
pub(super) fn fleet_serving(serving: &[Option<u64>]) -> crate::fleet::FleetStatus {
    let agents = serving.iter().enumerate().map(|(i, generation)| {
        let addr = format!("10.0.0.{i}:9443");
        let agent = crate::fleet::AgentLinkStatus {
            addr: addr.clone(),
            connected: true,
            serving_generation: *generation,
            ..Default::default()
        };
        (addr, agent)
    });
    crate::fleet::FleetStatus {
        epoch: Some(1),
        agents: agents.collect(),
    }
}

pub(super) fn gateway_status_writes(fake: &FakeApi) -> usize {
    fake.requests()
        .iter()
        .filter(|(method, path)| {
            *method == Method::PATCH
                && path.starts_with("/apis/gateway.networking.k8s.io/")
                && path.contains("/status")
        })
        .count()
}

pub(super) async fn status_of(
    client: &::kube::Client,
    kind: Kind,
    namespace: &str,
    name: &str,
) -> Value {
    let api: Api<DynamicObject> = if kind.is_cluster_scoped() {
        Api::all_with(client.clone(), &resource(kind))
    } else {
        Api::namespaced_with(client.clone(), namespace, &resource(kind))
    };
    let object = api.get(name).await.unwrap();
    object.data.get("status").cloned().unwrap_or(Value::Null)
}

/// Waits until the route's entry of ours has `Accepted` = `accepted`.
async fn route_accepted_becomes(client: &::kube::Client, accepted: &str) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let status = status_of(client, Kind::HttpRoute, "app", "web").await;
        let ours = status["parents"].as_array().and_then(|all| {
            all.iter()
                .find(|p| p["controllerName"] == "hawser.dev/gateway-controller")
                .cloned()
        });
        let now = ours.as_ref().and_then(|p| {
            p["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "Accepted"))
                .map(|c| c["status"].clone())
        });
        if now.as_ref().and_then(Value::as_str) == Some(accepted) {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the route's Accepted never became {accepted}: {status:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn gateway_api_objects_and_namespaces_reach_the_store() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    nudge(&fake, 0);
    apply_gateway(&fake);
    apply_route(&fake, "http");
    let mut source = Source::start(client, KubeSourceOptions::default());
    let (_, store) = source.next_delivery().await;
    assert_eq!(
        store
            .gateway_class("hawser")
            .map(|c| c.controller_name.as_str()),
        Some("hawser.dev/gateway-controller")
    );
    let gateway = store.gateway(&ObjectKey::new("app", "edge")).unwrap();
    assert_eq!(gateway.listeners[0].name, "http");
    assert_eq!(route_section(&store).as_deref(), Some("http"));
    assert_eq!(
        store.namespace("app").and_then(|n| n.labels.get("team")),
        Some(&"web".to_string())
    );
    // A changed route is in the next render.
    apply_route(&fake, "other");
    rendered_where(&source, |s| route_section(s).as_deref() == Some("other")).await;
    source.stop().await;
}

#[tokio::test]
async fn a_gateway_api_kind_not_served_blocks_no_render() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    fake.unserve("gateway.networking.k8s.io/v1alpha2", "tcproutes");
    fake.unserve(V1, "gateways");
    let mut source = Source::start(client, KubeSourceOptions::default());
    let (_, store) = source.next_delivery().await;
    assert_eq!(hosts(&store), ["a=a.example.com"]);
    let watches = source.status.borrow().cluster.clone().unwrap().watches;
    let tcp = &watches["TCPRoute"];
    assert!(tcp.synced, "{tcp:?}");
    assert!(
        tcp.last_error.as_deref().is_some_and(
            |e| e.contains("does not serve gateway.networking.k8s.io/v1alpha2 TCPRoute")
        ),
        "{tcp:?}"
    );

    // Installed later: listed for real once the watch tries again.
    fake.serve(V1, "gateways");
    apply_gateway(&fake);
    // The watch tries again with kube's backoff, then lists for real.
    rendered_where(&source, |s| {
        s.gateway(&ObjectKey::new("app", "edge")).is_some()
    })
    .await;
    source.stop().await;
}

#[tokio::test]
async fn gateway_status_is_written_once_per_real_change_by_the_leader_only() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    nudge(&fake, 0);
    apply_gateway(&fake);
    apply_route(&fake, "http");
    let mut source = Source::start(client.clone(), KubeSourceOptions::default());
    source.next_delivery().await;

    let (leading_tx, leading) = watch::channel(Some(1));
    let (stop, stopped) = oneshot::channel::<()>();
    // No publish Service; an agent serves every generation this test renders.
    let (_fleet_tx, fleet) = watch::channel(fleet_serving(&[Some(1000)]));
    let sources = GatewayStatusSources {
        stores: source.stores.clone(),
        fleet,
        addresses: None,
    };
    let task = tokio::spawn(publish_gateway_status(
        client.clone(),
        sources,
        leading,
        async move {
            let _ = stopped.await;
        },
    ));
    let status = route_accepted_becomes(&client, "True").await;
    let parents = status["parents"].as_array().unwrap();
    assert_eq!(parents.len(), 2, "{status:#}");
    assert_eq!(
        parents[0]["controllerName"], "example.com/mesh",
        "another controller's entry is kept"
    );
    assert_eq!(parents[1]["parentRef"]["sectionName"], "http");
    let gateway = status_of(&client, Kind::Gateway, "app", "edge").await;
    assert_eq!(gateway["listeners"][0]["attachedRoutes"], 1, "{gateway:#}");
    assert_eq!(gateway["conditions"][0]["type"], "Accepted");
    assert!(gateway["conditions"][0]["lastTransitionTime"].is_string());
    let class = status_of(&client, Kind::GatewayClass, "", "hawser").await;
    assert_eq!(class["conditions"][0]["status"], "True", "{class:#}");
    assert_eq!(gateway_status_writes(&fake), 3);

    // The writes' echoes render nothing; a render of the same store writes nothing.
    let renders = source.status.borrow().renders;
    nudge(&fake, 1);
    source.next_delivery().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(gateway_status_writes(&fake), 3, "{:?}", fake.requests());
    assert_eq!(
        source.status.borrow().renders,
        renders + 1,
        "a status write rendered"
    );

    // Not leading: a change is left for the leader. The change leaves the
    // configuration as it was (nothing is delivered), yet it is followed.
    leading_tx.send_replace(None);
    apply_route(&fake, "nosuch");
    rendered_where(&source, |s| route_section(s).as_deref() == Some("nosuch")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(gateway_status_writes(&fake), 3);

    // Leading again: the route is no longer accepted and the listener has no
    // route; written once each.
    leading_tx.send_replace(Some(2));
    let status = route_accepted_becomes(&client, "False").await;
    assert_eq!(status["parents"][0]["controllerName"], "example.com/mesh");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while status_of(&client, Kind::Gateway, "app", "edge").await["listeners"][0]["attachedRoutes"]
        != 0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "attachedRoutes never 0"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(gateway_status_writes(&fake), 5, "{:?}", fake.requests());
    let _ = stop.send(());
    task.await.unwrap();
    source.stop().await;
}

#[test]
fn every_gateway_api_kind_converts_from_its_untyped_object() {
    let parent = json!([{"name": "edge"}]);
    let backends = json!([{"backendRefs": [{"name": "web", "port": 80}]}]);
    let objects = [
        (
            Kind::GrpcRoute,
            json!({"parentRefs": parent, "rules": backends}),
        ),
        (
            Kind::TlsRoute,
            json!({"parentRefs": parent, "hostnames": ["a.example.com"], "rules": backends}),
        ),
        (
            Kind::TcpRoute,
            json!({"parentRefs": parent, "rules": backends}),
        ),
        (
            Kind::ReferenceGrant,
            json!({
                "from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "app"}],
                "to": [{"group": "", "kind": "Service"}],
            }),
        ),
    ];
    for (kind, spec) in objects {
        let resource = resource(kind);
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": resource.api_version, "kind": kind.as_str(),
            "metadata": {"name": "x", "namespace": "app"},
            "spec": spec,
        }))
        .unwrap();
        match crate::cluster::watch::convert(kind, object) {
            crate::cluster::watch::Item::Object(object) => {
                assert_eq!(object.object_ref().kind, kind);
                assert_eq!(object.object_ref().key, ObjectKey::new("app", "x"));
            }
            crate::cluster::watch::Item::Malformed { reason, .. } => {
                panic!("{kind} does not convert: {reason}")
            }
        }
    }
}
