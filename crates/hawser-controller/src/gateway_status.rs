//! The Gateway API status hawser computes, shaped as the objects' Kubernetes
//! `status` stanzas.
//!
//! ```text
//!  GatewayStatus (conditions, listeners, route parents)
//!        │            + the object's current status (cluster mode: transition
//!        │              times kept, other controllers' parent entries kept)
//!        ▼
//!  JSON status stanza ──► status patch (cluster) / `hawser status --output json`
//! ```
//!
//! Without a clock (`now: None`) conditions carry no `lastTransitionTime`:
//! local mode reports what would be written, not when.
//!
//! In a cluster the status writer also holds `Programmed` back until the
//! fleet serves the Gateway ([`programmed`]), gives Gateways the publish
//! Service's addresses ([`addresses`]), and Warning Events name what the
//! status refuses ([`refusals`]).

mod addresses;
mod programmed;
mod refusals;

use hawser_model::{ParentRef, RouteGroupKind};
use hawser_render::{ClassStatus, Condition, ConditionStatus, GatewayObjectStatus, RouteStatus};
use serde_json::{Map, Value, json};

pub use addresses::{AddressAssignment, assign_addresses};
pub use programmed::{CarriedSince, Rollout, programmed_status};
pub use refusals::{RefusedCondition, refused_conditions};

/// A GatewayClass's `status`.
pub fn class_stanza(class: &ClassStatus, previous: &Value, now: Option<&str>) -> Value {
    json!({ "conditions": conditions(&class.conditions, &previous["conditions"], now) })
}

/// A Gateway's `status`: its conditions and one entry per listener.
pub fn gateway_stanza(gateway: &GatewayObjectStatus, previous: &Value, now: Option<&str>) -> Value {
    let listeners: Vec<Value> = gateway
        .listeners
        .iter()
        .map(|listener| {
            let before = previous["listeners"]
                .as_array()
                .and_then(|all| all.iter().find(|l| l["name"] == listener.name.as_str()))
                .map_or(&Value::Null, |l| &l["conditions"]);
            json!({
                "name": listener.name,
                "attachedRoutes": listener.attached_routes,
                "supportedKinds": listener.supported_kinds.iter().map(kind_json).collect::<Vec<_>>(),
                "conditions": conditions(&listener.conditions, before, now),
            })
        })
        .collect();
    json!({
        "conditions": conditions(&gateway.conditions, &previous["conditions"], now),
        "listeners": listeners,
    })
}

/// A route's `status.parents`: the entries of other controllers in
/// `previous` kept in their order, then ours (any earlier entry of ours is
/// replaced, so a parentRef the route no longer names loses its entry).
pub fn route_parents(
    route: &RouteStatus,
    controller: &str,
    previous: &Value,
    now: Option<&str>,
) -> Value {
    let before: &[Value] = previous["parents"].as_array().map_or(&[], Vec::as_slice);
    let mut parents: Vec<Value> = before
        .iter()
        .filter(|p| p["controllerName"] != controller)
        .cloned()
        .collect();
    for parent in &route.parents {
        let reference = parent_ref_json(&parent.parent_ref);
        let earlier = before
            .iter()
            .find(|p| p["controllerName"] == controller && p["parentRef"] == reference)
            .map_or(&Value::Null, |p| &p["conditions"]);
        parents.push(json!({
            "parentRef": reference,
            "controllerName": parent.controller_name,
            "conditions": conditions(&parent.conditions, earlier, now),
        }));
    }
    json!({ "parents": parents })
}

/// `metav1.Condition`s; a condition whose status did not change keeps the
/// transition time `previous` gives it.
pub fn conditions(conditions: &[Condition], previous: &Value, now: Option<&str>) -> Vec<Value> {
    conditions
        .iter()
        .map(|condition| {
            let status = match condition.status {
                ConditionStatus::True => "True",
                ConditionStatus::False => "False",
            };
            let mut out = Map::new();
            out.insert("type".into(), condition.condition_type.into());
            out.insert("status".into(), status.into());
            out.insert("reason".into(), condition.reason.into());
            out.insert("message".into(), condition.message.clone().into());
            if let Some(generation) = condition.observed_generation {
                out.insert("observedGeneration".into(), generation.into());
            }
            if let Some(now) = now {
                let kept = previous.as_array().and_then(|all| {
                    all.iter()
                        .find(|c| c["type"] == condition.condition_type && c["status"] == status)
                });
                let time = kept
                    .and_then(|c| c["lastTransitionTime"].as_str())
                    .unwrap_or(now);
                out.insert("lastTransitionTime".into(), time.into());
            }
            Value::Object(out)
        })
        .collect()
}

/// A parentRef as the API spells it (absent fields left out).
pub fn parent_ref_json(parent: &ParentRef) -> Value {
    let mut out = Map::new();
    out.insert("group".into(), parent.group.clone().into());
    out.insert("kind".into(), parent.kind.clone().into());
    if let Some(namespace) = &parent.namespace {
        out.insert("namespace".into(), namespace.clone().into());
    }
    out.insert("name".into(), parent.name.clone().into());
    if let Some(section) = &parent.section_name {
        out.insert("sectionName".into(), section.clone().into());
    }
    if let Some(port) = parent.port {
        out.insert("port".into(), port.into());
    }
    Value::Object(out)
}

fn kind_json(kind: &RouteGroupKind) -> Value {
    json!({ "group": kind.group, "kind": kind.kind })
}

#[cfg(test)]
mod tests {
    use hawser_model::{Kind, ObjectKey, ObjectRef};
    use hawser_render::RouteParentStatus;

    use super::*;

    fn accepted(ok: bool) -> Condition {
        let reason = if ok {
            "Accepted"
        } else {
            "NotAllowedByListeners"
        };
        let mut condition = conditions_of(ok, reason);
        condition.observed_generation = Some(2);
        condition
    }

    fn conditions_of(ok: bool, reason: &'static str) -> Condition {
        Condition {
            condition_type: "Accepted",
            status: if ok {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            reason,
            message: String::new(),
            observed_generation: None,
        }
    }

    fn route(ok: bool) -> RouteStatus {
        RouteStatus {
            route: ObjectRef::new(Kind::HttpRoute, ObjectKey::new("app", "web")),
            parents: vec![RouteParentStatus {
                parent_ref: ParentRef {
                    group: "gateway.networking.k8s.io".into(),
                    kind: "Gateway".into(),
                    namespace: None,
                    name: "edge".into(),
                    section_name: Some("http".into()),
                    port: None,
                },
                controller_name: "hawser.dev/gateway-controller".into(),
                conditions: vec![accepted(ok)],
            }],
        }
    }

    #[test]
    fn other_controllers_entries_are_kept_and_ours_replaced() {
        let previous = json!({ "parents": [
            { "parentRef": { "name": "mesh" }, "controllerName": "example.com/mesh", "conditions": [] },
            { "parentRef": { "name": "gone" }, "controllerName": "hawser.dev/gateway-controller", "conditions": [] },
        ]});
        let parents = route_parents(
            &route(true),
            "hawser.dev/gateway-controller",
            &previous,
            None,
        );
        let parents = parents["parents"].as_array().unwrap();
        assert_eq!(parents.len(), 2);
        assert_eq!(parents[0]["controllerName"], "example.com/mesh");
        assert_eq!(parents[1]["parentRef"]["name"], "edge");
        assert_eq!(parents[1]["parentRef"]["sectionName"], "http");
        assert_eq!(parents[1]["conditions"][0]["status"], "True");
        assert_eq!(parents[1]["conditions"][0]["observedGeneration"], 2);
        assert!(
            parents[1]["conditions"][0]
                .get("lastTransitionTime")
                .is_none()
        );
    }

    #[test]
    fn a_transition_time_is_kept_until_the_status_changes() {
        let controller = "hawser.dev/gateway-controller";
        let first = route_parents(&route(true), controller, &Value::Null, Some("t1"));
        assert_eq!(
            first["parents"][0]["conditions"][0]["lastTransitionTime"],
            "t1"
        );
        let same = route_parents(&route(true), controller, &first, Some("t2"));
        assert_eq!(same, first, "an unchanged status is written as it was");
        let flipped = route_parents(&route(false), controller, &first, Some("t3"));
        assert_eq!(
            flipped["parents"][0]["conditions"][0]["lastTransitionTime"],
            "t3"
        );
    }
}
