//! The Gateway API status hawser computes: conditions for every owned
//! GatewayClass and Gateway (with per-listener conditions, attached route
//! counts and supported kinds) and for every route's parentRefs that name an
//! owned Gateway. A status writer copies these into the objects' `status`.
//!
//! `Programmed` states what this render programs; a writer that knows the
//! fleet has not applied it yet may report `Pending` instead.

use hawser_model::{ObjectKey, ObjectRef, ParentRef, RouteGroupKind};
use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GatewayStatus {
    pub classes: Vec<ClassStatus>,
    pub gateways: Vec<GatewayObjectStatus>,
    /// Routes with at least one parentRef naming an owned Gateway.
    pub routes: Vec<RouteStatus>,
}

/// A metav1.Condition, without the transition time (set by the writer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub condition_type: &'static str,
    pub status: ConditionStatus,
    pub reason: &'static str,
    pub message: String,
    pub observed_generation: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ConditionStatus {
    True,
    False,
}

impl Condition {
    pub(crate) fn new(
        condition_type: &'static str,
        ok: bool,
        reason: &'static str,
        message: impl Into<String>,
        observed_generation: Option<i64>,
    ) -> Self {
        Condition {
            condition_type,
            status: if ok {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            reason,
            message: message.into(),
            observed_generation,
        }
    }

    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassStatus {
    pub name: String,
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GatewayObjectStatus {
    pub gateway: ObjectKey,
    pub conditions: Vec<Condition>,
    pub listeners: Vec<ListenerStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerStatus {
    pub name: String,
    pub attached_routes: u32,
    pub supported_kinds: Vec<RouteGroupKind>,
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteStatus {
    pub route: ObjectRef,
    pub parents: Vec<RouteParentStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteParentStatus {
    pub parent_ref: ParentRef,
    pub controller_name: String,
    pub conditions: Vec<Condition>,
}

/// Finds a condition by type (tests and status writers).
pub fn condition<'a>(conditions: &'a [Condition], condition_type: &str) -> Option<&'a Condition> {
    conditions
        .iter()
        .find(|c| c.condition_type == condition_type)
}

/// A valid Gateway's `Accepted` and `Programmed`, from its listeners':
/// accepted when every listener is programmed, accepted with
/// `ListenersNotValid` when some are, refused when none is.
pub(super) fn listener_summary(
    listeners: &[ListenerStatus],
    generation: Option<i64>,
) -> (Condition, Condition) {
    let total = listeners.len();
    let not_valid: Vec<&str> = listeners
        .iter()
        .filter(|l| !condition(&l.conditions, "Programmed").is_some_and(Condition::is_true))
        .map(|l| l.name.as_str())
        .collect();
    let programmed = total - not_valid.len();
    let not_valid = format!("listeners not valid: {}", not_valid.join(", "));
    let accepted = match programmed {
        p if p == total && p > 0 => Condition::new("Accepted", true, "Accepted", "", generation),
        0 => Condition::new(
            "Accepted",
            false,
            "ListenersNotValid",
            not_valid,
            generation,
        ),
        _ => Condition::new("Accepted", true, "ListenersNotValid", not_valid, generation),
    };
    let programmed = if programmed > 0 {
        Condition::new("Programmed", true, "Programmed", "", generation)
    } else {
        Condition::new(
            "Programmed",
            false,
            "Invalid",
            "no listener is programmed",
            generation,
        )
    };
    (accepted, programmed)
}

impl RouteStatus {
    /// This route's status once it is left out of the configuration because
    /// HAProxy refuses what it produces: `Accepted=False` (`Quarantined`,
    /// with `message`) on every parent it had.
    pub fn quarantined(&self, message: &str) -> RouteStatus {
        let mut status = self.clone();
        for parent in &mut status.parents {
            let generation = parent
                .conditions
                .first()
                .and_then(|c| c.observed_generation);
            parent.conditions.retain(|c| c.condition_type != "Accepted");
            parent.conditions.insert(
                0,
                Condition::new("Accepted", false, "Quarantined", message, generation),
            );
        }
        status
    }
}

impl GatewayStatus {
    /// A listener the table accepted but whose port the configuration
    /// cannot serve (something else binds it): `Accepted=False`
    /// (`PortUnavailable`, with `message`) and not programmed, and its
    /// Gateway's conditions say so.
    pub(crate) fn mark_unserved(&mut self, gateway: &ObjectKey, listener: &str, message: &str) {
        let Some(entry) = self.gateways.iter_mut().find(|g| &g.gateway == gateway) else {
            return;
        };
        let Some(status) = entry.listeners.iter_mut().find(|l| l.name == listener) else {
            return;
        };
        for c in &mut status.conditions {
            let generation = c.observed_generation;
            match c.condition_type {
                "Accepted" => {
                    *c = Condition::new("Accepted", false, "PortUnavailable", message, generation);
                }
                "Programmed" => {
                    *c = Condition::new(
                        "Programmed",
                        false,
                        "Invalid",
                        "the listener's port cannot be served",
                        generation,
                    );
                }
                _ => {}
            }
        }
        let valid = entry
            .conditions
            .iter()
            .all(|c| c.condition_type != "Accepted" || c.reason != "Invalid");
        if valid {
            let generation = entry.conditions.first().and_then(|c| c.observed_generation);
            let (accepted, programmed) = listener_summary(&entry.listeners, generation);
            entry.conditions = vec![accepted, programmed];
        }
    }
}
