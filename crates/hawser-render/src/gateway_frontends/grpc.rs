//! GRPCRoute rules as the `gateway` library writes them: a gRPC method is the
//! path `/<service>/<method>`; backends are the h2c twins of the Service-port
//! backends.

use hawser_model::{GrpcMethodMatch, ValueMatchKind};

use super::conditions::{self, Condition};
use super::{H2_SUFFIX, RuleView, actions, map_routes, weighted};
use crate::gateway::{GrpcRuleEntry, ListenerEntry};

/// Any one path segment, for a service or method the match leaves open.
const ANY_SEGMENT: &str = "[^/]+";

pub(super) fn grpc_rule(
    id: String,
    origin: &str,
    listener: &ListenerEntry,
    entry: &GrpcRuleEntry,
) -> RuleView {
    let mut conditions = vec![conditions::tls(listener.protocol)];
    conditions.extend(conditions::host(entry.hostname.as_deref()));
    conditions.extend(entry.method.as_ref().map(method));
    conditions.extend(entry.headers.iter().map(conditions::header));
    let chosen = vec![conditions::rule_is(&id)];
    let source = format!(
        "GRPCRoute {} rule {} match {} {origin}",
        entry.route, entry.rule_index, entry.match_index
    );
    let mut rule = RuleView::new(id, map_routes::GRPC_RANK, source, conditions);
    rule.owner = super::route_owner(hawser_model::Kind::GrpcRoute, &entry.route);
    if entry.unavailable {
        return rule.answering_500(chosen);
    }
    let ctx = actions::FilterContext {
        listener,
        prefix: None,
    };
    actions::add_filters(&mut rule, &entry.filters, &chosen, &ctx);
    weighted(&mut rule, &entry.backends, &chosen, &ctx, H2_SUFFIX);
    rule
}

/// Service and method names are validated (letters, digits, `_`, and `.`
/// in a service), so they can stand in a regular expression as they are.
fn method(m: &GrpcMethodMatch) -> Condition {
    let (service, method) = (m.service.as_deref(), m.method.as_deref());
    match (m.kind, service, method) {
        (ValueMatchKind::Exact, Some(s), Some(me)) => {
            Condition::new("path", "-m str", format!("/{s}/{me}"))
        }
        (ValueMatchKind::Exact, Some(s), None) => {
            Condition::new("path", "-m beg", format!("/{s}/"))
        }
        (ValueMatchKind::Exact, None, me) => Condition::new(
            "path",
            "-m reg",
            format!("^/{ANY_SEGMENT}/{}$", me.unwrap_or(ANY_SEGMENT)),
        ),
        (ValueMatchKind::RegularExpression, s, me) => {
            Condition::new("path", "-m reg", method_regex(s, me))
        }
    }
}

/// The path regex HAProxy compiles for a `RegularExpression` method match
/// (route checks compile exactly this).
pub(crate) fn method_regex(service: Option<&str>, method: Option<&str>) -> String {
    format!(
        "^/({})/({})$",
        service.unwrap_or(ANY_SEGMENT),
        method.unwrap_or(ANY_SEGMENT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(kind: ValueMatchKind, service: Option<&str>, m: Option<&str>) -> (String, String) {
        let condition = method(&GrpcMethodMatch {
            kind,
            service: service.map(str::to_string),
            method: m.map(str::to_string),
        });
        (condition.matcher, condition.value.unwrap_or_default())
    }

    #[test]
    fn methods_become_path_conditions() {
        let exact = ValueMatchKind::Exact;
        let regex = ValueMatchKind::RegularExpression;
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            path_of(exact, Some("pkg.Echo"), Some("Get")),
            pair("-m str", "/pkg.Echo/Get")
        );
        assert_eq!(
            path_of(exact, Some("pkg.Echo"), None),
            pair("-m beg", "/pkg.Echo/")
        );
        assert_eq!(
            path_of(exact, None, Some("Get")),
            pair("-m reg", "^/[^/]+/Get$")
        );
        assert_eq!(
            path_of(regex, Some("pkg\\..*"), None),
            pair("-m reg", "^/(pkg\\..*)/([^/]+)$")
        );
    }
}
