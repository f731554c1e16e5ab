//! The status report as JSON: `items` holds one object per GatewayClass,
//! Gateway and route, each with `apiVersion`, `kind`, `metadata` and the
//! `status` stanza the controller writes in a cluster (without transition
//! times); `ingresses` says which Ingresses are served, ignored or rejected;
//! `quarantined` lists what HAProxy refuses and is left out.

use hawser_controller::gateway_status::{class_stanza, gateway_stanza, route_parents};
use hawser_model::{Kind, ObjectKey};
use serde_json::{Map, Value, json};

use super::Report;

pub fn report(report: &Report<'_>) -> Value {
    let status = &report.routing.status;
    let mut items = Vec::new();
    for class in &status.classes {
        let key = ObjectKey::cluster(class.name.clone());
        items.push(item(
            Kind::GatewayClass,
            &key,
            class_stanza(class, &Value::Null, None),
        ));
    }
    for gateway in &status.gateways {
        items.push(item(
            Kind::Gateway,
            &gateway.gateway,
            gateway_stanza(gateway, &Value::Null, None),
        ));
    }
    for route in &status.routes {
        items.push(item(
            route.route.kind,
            &route.route.key,
            route_parents(route, &report.controller, &Value::Null, None),
        ));
    }
    let ingresses: Vec<Value> = report
        .ingresses
        .iter()
        .map(|ingress| {
            let mut out = Map::new();
            out.insert("namespace".into(), ingress.key.namespace.clone().into());
            out.insert("name".into(), ingress.key.name.clone().into());
            out.insert("state".into(), ingress.state.as_str().into());
            if let Some(why) = &ingress.why {
                out.insert("message".into(), why.clone().into());
            }
            if !ingress.features.is_empty() {
                out.insert("features".into(), ingress.features.clone().into());
            }
            Value::Object(out)
        })
        .collect();
    let quarantined: Vec<Value> = report
        .quarantined
        .iter()
        .map(|d| json!({ "object": d.object.to_string(), "message": d.message }))
        .collect();
    json!({
        "controllerName": report.controller,
        "items": items,
        "ingresses": ingresses,
        "quarantined": quarantined,
    })
}

fn item(kind: Kind, key: &ObjectKey, status: Value) -> Value {
    let mut metadata = Map::new();
    if !key.namespace.is_empty() {
        metadata.insert("namespace".into(), key.namespace.clone().into());
    }
    metadata.insert("name".into(), key.name.clone().into());
    json!({
        "apiVersion": kind.api_version(),
        "kind": kind.as_str(),
        "metadata": metadata,
        "status": status,
    })
}
