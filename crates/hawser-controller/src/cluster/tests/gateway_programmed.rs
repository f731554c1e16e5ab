//! A Gateway's `Programmed` and `status.addresses` against the fake API
//! server: Pending until every agent serves the generation that carries it,
//! the publish Service's addresses followed as they change, `spec.addresses`
//! that cannot be honoured reported, each written once; and Warning Events
//! for what the Gateway API status refuses.

use ::kube::api::{Api, DynamicObject, Patch, PatchParams};

use super::gateway_api::{
    apply_gateway, apply_route, fleet_serving, gateway_status_writes, nudge, resource, status_of,
};
use super::*;
use crate::fleet::FleetStatus;

/// The Gateway's `Programmed` condition (gateway-level, or listener `http`'s).
fn programmed(status: &Value, listener: bool) -> (String, String, String) {
    let conditions = if listener {
        &status["listeners"][0]["conditions"]
    } else {
        &status["conditions"]
    };
    let found = conditions
        .as_array()
        .and_then(|all| all.iter().find(|c| c["type"] == "Programmed"))
        .cloned()
        .unwrap_or(Value::Null);
    let text = |field: &str| found[field].as_str().unwrap_or("").to_string();
    (text("status"), text("reason"), text("message"))
}

/// Waits until Gateway `app/edge`'s status satisfies `check`; returns it.
async fn gateway_status_where(
    client: &::kube::Client,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let status = status_of(client, Kind::Gateway, "app", "edge").await;
        if check(&status) {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Gateway's status never showed {what}: {status:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn is_programmed(status: &Value, reason: &str) -> bool {
    programmed(status, false).1 == reason
}

fn ips(status: &Value) -> Vec<String> {
    status["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            format!(
                "{}={}",
                a["type"].as_str().unwrap_or(""),
                a["value"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// Gateway `app/edge` asks for `addresses` (a spec change: a new generation).
async fn ask_for_addresses(client: &::kube::Client, addresses: Value) {
    let gateways: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "app", &resource(Kind::Gateway));
    let patch = json!({"spec": {"addresses": addresses}});
    gateways
        .patch("edge", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// Waits until writes stop, then checks how many there were.
async fn writes_settle_at(fake: &FakeApi, expected: usize) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        gateway_status_writes(fake),
        expected,
        "{:#?}",
        fake.requests()
    );
}

#[tokio::test]
async fn a_gateway_is_programmed_once_every_agent_serves_it_with_the_publish_services_address() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    nudge(&fake, 0);
    apply_gateway(&fake);
    fake.apply(&publish_service("203.0.113.7"));
    let mut source = Source::start(client.clone(), KubeSourceOptions::default());
    source.next_delivery().await;

    let (stop, stopped) = stop_signal();
    let addresses = follow_addresses(&client, stopped());
    // Two agents; neither serves anything yet.
    let (fleet_tx, fleet) = watch::channel(fleet_serving(&[None, None]));
    let sources = GatewayStatusSources {
        stores: source.stores.clone(),
        fleet,
        addresses: Some(addresses),
    };
    let (_leading_tx, leading) = watch::channel(Some(1));
    let task = tokio::spawn(publish_gateway_status(
        client.clone(),
        sources,
        leading,
        stopped(),
    ));

    let status = gateway_status_where(&client, "Pending", |s| is_programmed(s, "Pending")).await;
    let first = source
        .stores
        .borrow()
        .as_ref()
        .map(|s| s.generation)
        .unwrap();
    let (state, _, message) = programmed(&status, false);
    assert_eq!(state, "False");
    assert!(
        message.contains(&format!("generation {first}")),
        "{message}"
    );
    assert_eq!(programmed(&status, true).1, "Pending", "{status:#}");
    assert_eq!(ips(&status), ["IPAddress=203.0.113.7"]);
    // The class and the Gateway, once each.
    writes_settle_at(&fake, 2).await;

    // One agent serves it: still pending; a fleet change that changes no
    // agent's serving generation writes nothing.
    fleet_tx.send_replace(fleet_serving(&[Some(first), None]));
    fleet_tx.send_modify(|f: &mut FleetStatus| {
        for agent in f.agents.values_mut() {
            agent.pushes += 1;
        }
    });
    writes_settle_at(&fake, 2).await;

    // Both serve it: Programmed, gateway and listener, in one write.
    fleet_tx.send_replace(fleet_serving(&[Some(first), Some(first)]));
    let status =
        gateway_status_where(&client, "Programmed", |s| is_programmed(s, "Programmed")).await;
    assert_eq!(programmed(&status, false).0, "True");
    assert_eq!(programmed(&status, true).1, "Programmed");
    writes_settle_at(&fake, 3).await;

    // The publish Service's address changes: followed, once.
    fake.apply(&publish_service("203.0.113.8"));
    gateway_status_where(&client, "the new address", |s| {
        ips(s) == ["IPAddress=203.0.113.8"]
    })
    .await;
    writes_settle_at(&fake, 4).await;

    // A new generation that carries the Gateway unchanged: it stays
    // programmed while the agents still serve the older one; nothing written.
    nudge(&fake, 1);
    let (second, _) = source.next_delivery().await;
    assert!(second.get() > first);
    writes_settle_at(&fake, 4).await;

    // An address the Service does not have: AddressNotUsable, naming it.
    ask_for_addresses(
        &client,
        json!([{"type": "IPAddress", "value": "198.51.100.1"}]),
    )
    .await;
    let status = gateway_status_where(&client, "AddressNotUsable", |s| {
        is_programmed(s, "AddressNotUsable")
    })
    .await;
    let message = programmed(&status, false).2;
    assert!(
        message.contains("198.51.100.1") && message.contains("203.0.113.8"),
        "{message}"
    );
    assert_eq!(ips(&status), ["IPAddress=203.0.113.8"]);

    // The Service's own address: honoured, and pending until the agents
    // serve the generation that carries the changed Gateway.
    ask_for_addresses(
        &client,
        json!([{"type": "IPAddress", "value": "203.0.113.8"}]),
    )
    .await;
    gateway_status_where(&client, "Pending", |s| is_programmed(s, "Pending")).await;
    let newest = source
        .stores
        .borrow()
        .as_ref()
        .map(|s| s.generation)
        .unwrap();
    fleet_tx.send_replace(fleet_serving(&[Some(newest), Some(newest)]));
    gateway_status_where(&client, "Programmed", |s| is_programmed(s, "Programmed")).await;

    let _ = stop.send(true);
    task.await.unwrap();
    source.stop().await;
}

#[tokio::test]
async fn with_no_agent_a_gateway_is_pending_and_without_a_publish_service_it_lists_no_address() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    nudge(&fake, 0);
    apply_gateway(&fake);
    let mut source = Source::start(client.clone(), KubeSourceOptions::default());
    source.next_delivery().await;
    let (stop, stopped) = stop_signal();
    let (_fleet_tx, fleet) = watch::channel(FleetStatus::default());
    let sources = GatewayStatusSources {
        stores: source.stores.clone(),
        fleet,
        addresses: None,
    };
    let (_leading_tx, leading) = watch::channel(Some(1));
    let task = tokio::spawn(publish_gateway_status(
        client.clone(),
        sources,
        leading,
        stopped(),
    ));
    let status = gateway_status_where(&client, "Pending", |s| is_programmed(s, "Pending")).await;
    assert!(
        programmed(&status, false).2.contains("no agent"),
        "{status:#}"
    );
    assert!(status.get("addresses").is_none(), "{status:#}");
    writes_settle_at(&fake, 2).await;
    let _ = stop.send(true);
    task.await.unwrap();
    source.stop().await;
}

#[tokio::test]
async fn a_refused_route_parent_gets_one_warning_event_naming_the_reason() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    nudge(&fake, 0);
    apply_gateway(&fake);
    apply_route(&fake, "nosuch");
    let mut source = Source::start(client.clone(), KubeSourceOptions::default());
    source.next_delivery().await;
    let (stop, stopped) = stop_signal();
    let (_leading_tx, leading) = watch::channel(Some(1));
    let task = tokio::spawn(report_gateway_refusals(
        client.clone(),
        "controller-a".into(),
        source.stores.clone(),
        leading,
        stopped(),
    ));
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "app");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let event = loop {
        let listed = events.list(&Default::default()).await.unwrap();
        if let Some(event) = listed.items.into_iter().next() {
            break event;
        }
        assert!(tokio::time::Instant::now() < deadline, "no event");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(event.reason.as_deref(), Some("NoMatchingParent"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.kind.as_deref()),
        Some("HTTPRoute")
    );
    let note = event.note.clone().unwrap_or_default();
    assert!(
        note.starts_with("parent Gateway app/edge listener nosuch: "),
        "{note}"
    );
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("hawser.dev/gateway-controller")
    );

    // Later renders with the same refusal: no new event.
    nudge(&fake, 1);
    source.next_delivery().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let posts = fake
        .requests()
        .iter()
        .filter(|(method, path)| *method == Method::POST && path.contains("/events"))
        .count();
    assert_eq!(posts, 1, "{:?}", fake.requests());
    let _ = stop.send(true);
    task.await.unwrap();
    source.stop().await;
}
