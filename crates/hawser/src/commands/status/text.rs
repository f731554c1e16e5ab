//! The status report as a person reads it: one block per GatewayClass,
//! Gateway (and its listeners) and route (and each of its parents), every
//! condition with its reason, and the message when there is one (for a
//! route that does not attach, both sides of the check that failed); then
//! the objects hawser leaves alone and the Ingresses.

use std::fmt::Write as _;

use hawser_render::{Condition, ConditionStatus, condition};

use super::{IngressState, Report, hint};

pub fn report(report: &Report<'_>) -> String {
    let mut out = String::new();
    let status = &report.routing.status;
    let _ = writeln!(out, "Gateway API (controller {})", report.controller);
    if status.classes.is_empty() {
        let _ = writeln!(
            out,
            "  no GatewayClass has spec.controllerName {}",
            report.controller
        );
    }
    for class in &status.classes {
        let _ = writeln!(out, "GatewayClass {}", class.name);
        conditions(&mut out, "  ", &class.conditions);
    }
    for gateway in &status.gateways {
        let _ = writeln!(out, "Gateway {}", gateway.gateway);
        conditions(&mut out, "  ", &gateway.conditions);
        for listener in &gateway.listeners {
            let kinds: Vec<&str> = listener
                .supported_kinds
                .iter()
                .map(|k| k.kind.as_str())
                .collect();
            let _ = writeln!(
                out,
                "  listener {}: {} attached route{} (kinds: {})",
                listener.name,
                listener.attached_routes,
                if listener.attached_routes == 1 {
                    ""
                } else {
                    "s"
                },
                if kinds.is_empty() {
                    "none".to_string()
                } else {
                    kinds.join(", ")
                },
            );
            conditions(&mut out, "    ", &listener.conditions);
        }
    }
    for route in &status.routes {
        let _ = writeln!(out, "{}", route.route);
        for parent in &route.parents {
            let reference = &parent.parent_ref;
            let mut name = format!(
                "{} {}",
                reference.kind,
                reference.key(&route.route.key.namespace)
            );
            if let Some(section) = &reference.section_name {
                let _ = write!(name, " sectionName {section}");
            }
            if let Some(port) = reference.port {
                let _ = write!(name, " port {port}");
            }
            let accepted = condition(&parent.conditions, "Accepted");
            let verdict = match accepted {
                Some(accepted) if accepted.is_true() => "attached".to_string(),
                Some(accepted) => format!("NOT attached ({})", accepted.reason),
                None => "unknown".to_string(),
            };
            let _ = writeln!(out, "  parent {name}: {verdict}");
            conditions(&mut out, "    ", &parent.conditions);
            if let Some(refused) = accepted.filter(|a| !a.is_true()) {
                let why = hint::unattached(report.store, &route.route, reference, refused.reason);
                for line in why {
                    let _ = writeln!(out, "    - {line}");
                }
            }
        }
    }
    let unhandled = report.unhandled();
    if !unhandled.is_empty() {
        let _ = writeln!(out, "Not handled by {}", report.controller);
        for diagnostic in unhandled {
            let _ = writeln!(out, "  {diagnostic}");
        }
    }
    if !report.quarantined.is_empty() {
        let _ = writeln!(
            out,
            "Quarantined (HAProxy refuses what they produce; everything else is served)"
        );
        for diagnostic in &report.quarantined {
            let _ = writeln!(out, "  {}: {}", diagnostic.object, diagnostic.message);
        }
    }
    if !report.ingresses.is_empty() {
        let _ = writeln!(out, "Ingresses");
        for ingress in &report.ingresses {
            match (&ingress.why, ingress.state) {
                (Some(why), state) if state != IngressState::Served => {
                    let _ = writeln!(out, "  {} {}: {why}", state.as_str(), ingress.key);
                }
                (_, state) => {
                    let _ = writeln!(out, "  {} {}", state.as_str(), ingress.key);
                }
            }
            for feature in &ingress.features {
                let _ = writeln!(out, "    {feature}");
            }
        }
    }
    out
}

/// `Type  True|False  Reason`, then the message, indented, if there is one.
fn conditions(out: &mut String, indent: &str, conditions: &[Condition]) {
    for c in conditions {
        let status = match c.status {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
        };
        let _ = writeln!(
            out,
            "{indent}{:<13} {:<5}  {}",
            c.condition_type, status, c.reason
        );
        if !c.message.is_empty() {
            let _ = writeln!(out, "{indent}  {}", c.message);
        }
    }
}
