//! What a Gateway API status refuses, one line per refusal, for Warning
//! Events: a GatewayClass or Gateway not accepted, a listener not accepted
//! or with unresolved references, a route parent not accepted or with
//! unresolved references.

use hawser_model::{Kind, ObjectKey, ObjectRef};
use hawser_render::{Condition, GatewayStatus};

/// One refused condition of one object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RefusedCondition {
    pub object: ObjectRef,
    /// The condition's reason (`NotAllowedByListeners`, `RefNotPermitted`, ...).
    pub reason: &'static str,
    /// Where (the listener, the parent) and the condition's message.
    pub note: String,
}

/// Every refusal in `status`.
pub fn refused_conditions(status: &GatewayStatus) -> Vec<RefusedCondition> {
    let mut refused = Vec::new();
    for class in &status.classes {
        let object = ObjectRef::new(Kind::GatewayClass, ObjectKey::cluster(&class.name));
        push_refused(&mut refused, &object, "", &class.conditions);
    }
    for gateway in &status.gateways {
        let object = ObjectRef::new(Kind::Gateway, gateway.gateway.clone());
        push_refused(&mut refused, &object, "", &gateway.conditions);
        for listener in &gateway.listeners {
            let place = format!("listener {}: ", listener.name);
            push_refused(&mut refused, &object, &place, &listener.conditions);
        }
    }
    for route in &status.routes {
        for parent in &route.parents {
            let namespace = parent
                .parent_ref
                .namespace
                .as_deref()
                .unwrap_or(&route.route.key.namespace);
            let mut place = format!(
                "parent {} {namespace}/{}",
                parent.parent_ref.kind, parent.parent_ref.name
            );
            if let Some(section) = &parent.parent_ref.section_name {
                place.push_str(&format!(" listener {section}"));
            }
            place.push_str(": ");
            push_refused(&mut refused, &route.route, &place, &parent.conditions);
        }
    }
    refused
}

/// `Accepted=False` and `ResolvedRefs=False` among `conditions`.
fn push_refused(
    refused: &mut Vec<RefusedCondition>,
    object: &ObjectRef,
    place: &str,
    conditions: &[Condition],
) {
    let failing = conditions
        .iter()
        .filter(|c| matches!(c.condition_type, "Accepted" | "ResolvedRefs") && !c.is_true());
    for condition in failing {
        refused.push(RefusedCondition {
            object: object.clone(),
            reason: condition.reason,
            note: format!("{place}{}", condition.message),
        });
    }
}

#[cfg(test)]
mod tests {
    use hawser_model::ParentRef;
    use hawser_render::{
        ConditionStatus, GatewayObjectStatus, ListenerStatus, RouteParentStatus, RouteStatus,
    };

    use super::*;

    fn condition(condition_type: &'static str, ok: bool, reason: &'static str) -> Condition {
        Condition {
            condition_type,
            status: if ok {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            reason,
            message: format!("{reason} message"),
            observed_generation: None,
        }
    }

    #[test]
    fn refused_listeners_and_route_parents_are_named_with_their_reason() {
        let status = GatewayStatus {
            classes: Vec::new(),
            gateways: vec![GatewayObjectStatus {
                gateway: ObjectKey::new("app", "edge"),
                conditions: vec![condition("Accepted", true, "ListenersNotValid")],
                listeners: vec![ListenerStatus {
                    name: "https".into(),
                    attached_routes: 0,
                    supported_kinds: Vec::new(),
                    conditions: vec![
                        condition("Accepted", true, "Accepted"),
                        condition("ResolvedRefs", false, "InvalidCertificateRef"),
                        condition("Programmed", false, "Invalid"),
                    ],
                }],
            }],
            routes: vec![RouteStatus {
                route: ObjectRef::new(Kind::HttpRoute, ObjectKey::new("web", "shop")),
                parents: vec![RouteParentStatus {
                    parent_ref: ParentRef {
                        group: "gateway.networking.k8s.io".into(),
                        kind: "Gateway".into(),
                        namespace: Some("app".into()),
                        name: "edge".into(),
                        section_name: Some("https".into()),
                        port: None,
                    },
                    controller_name: "hawser.dev/gateway-controller".into(),
                    conditions: vec![
                        condition("Accepted", false, "NotAllowedByListeners"),
                        condition("ResolvedRefs", true, "ResolvedRefs"),
                    ],
                }],
            }],
        };
        let refused = refused_conditions(&status);
        let lines: Vec<(String, &str, &str)> = refused
            .iter()
            .map(|r| (r.object.to_string(), r.reason, r.note.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                (
                    "Gateway app/edge".to_string(),
                    "InvalidCertificateRef",
                    "listener https: InvalidCertificateRef message"
                ),
                (
                    "HTTPRoute web/shop".to_string(),
                    "NotAllowedByListeners",
                    "parent Gateway app/edge listener https: NotAllowedByListeners message"
                ),
            ]
        );
    }
}
