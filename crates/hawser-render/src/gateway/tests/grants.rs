//! Cross-namespace backends and certificates need a ReferenceGrant in the
//! target's namespace that names the source kind and namespace.

use hawser_model::{GrantFrom, GrantTo, ReferenceGrant};

use super::*;

/// A route in `app` sending to Service `other/shared`.
fn cross_route() -> Object {
    Object::HttpRoute(HttpRoute {
        meta: meta("app", "web", &[]),
        rules: vec![rule(
            vec![HttpRouteMatch::default()],
            vec![backend(Some("other"), "shared", 1)],
        )],
    })
}

fn grant(from_kind: &str, from_namespace: &str, to_kind: &str, to_name: Option<&str>) -> Object {
    Object::ReferenceGrant(ReferenceGrant {
        key: key("other", &format!("grant-{}", to_name.unwrap_or("all"))),
        from: vec![GrantFrom {
            group: GROUP.to_string(),
            kind: from_kind.to_string(),
            namespace: from_namespace.to_string(),
        }],
        to: vec![GrantTo {
            group: String::new(),
            kind: to_kind.to_string(),
            name: to_name.map(str::to_string),
        }],
    })
}

/// The `ResolvedRefs` state of the cross-namespace route given these grants.
fn resolved_with(grants: Vec<Object>) -> (&'static str, &'static str) {
    let objects = [
        gateway(vec![listener("http", 80, "HTTP")]),
        service("other", "shared"),
        cross_route(),
    ];
    let store = store(objects.into_iter().chain(grants));
    let routing = routing(&store);
    let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
    let rule = &listener_entry(&routing, "http").http_rules[0];
    let resolved = matches!(rule.backends[0].target, BackendTarget::Service { .. });
    assert_eq!(resolved, !rule.unavailable);
    assert_eq!(state(&conditions, "Accepted"), ("True", "Accepted"));
    state(&conditions, "ResolvedRefs")
}

#[test]
fn backends_in_other_namespaces_need_a_grant() {
    let refused = ("False", "RefNotPermitted");
    assert_eq!(resolved_with(vec![]), refused);
    assert_eq!(
        resolved_with(vec![grant("HTTPRoute", "app", "Service", None)]),
        ("True", "ResolvedRefs")
    );
    assert_eq!(
        resolved_with(vec![grant("HTTPRoute", "app", "Service", Some("shared"))]),
        ("True", "ResolvedRefs")
    );
    // The wrong name, source namespace, source kind or target kind grant nothing.
    assert_eq!(
        resolved_with(vec![grant("HTTPRoute", "app", "Service", Some("other"))]),
        refused
    );
    assert_eq!(
        resolved_with(vec![grant("HTTPRoute", "elsewhere", "Service", None)]),
        refused
    );
    assert_eq!(
        resolved_with(vec![grant("GRPCRoute", "app", "Service", None)]),
        refused
    );
    assert_eq!(
        resolved_with(vec![grant("HTTPRoute", "app", "Secret", None)]),
        refused
    );
}

#[test]
fn a_mirror_to_another_namespace_needs_a_grant_too() {
    use hawser_model::{HttpFilter, MirrorFraction, RequestMirror};
    let mirrored = |grants: Vec<Object>| {
        let mut r = rule(
            vec![HttpRouteMatch::default()],
            vec![backend(None, "web", 1)],
        );
        r.filters.push(HttpFilter::RequestMirror(RequestMirror {
            backend: backend(Some("other"), "shared", 1),
            fraction: MirrorFraction::ALL,
        }));
        let objects = [
            gateway(vec![listener("http", 80, "HTTP")]),
            service("other", "shared"),
            Object::HttpRoute(HttpRoute {
                meta: meta("app", "web", &[]),
                rules: vec![r],
            }),
        ];
        let routing = routing(&store(objects.into_iter().chain(grants)));
        let entry = &listener_entry(&routing, "http").http_rules[0];
        let mirrors = entry
            .filters
            .iter()
            .filter(|f| matches!(f, FilterEntry::RequestMirror(_)))
            .count();
        assert!(!entry.unavailable, "the rule serves either way");
        let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
        (mirrors, state(&conditions, "ResolvedRefs"))
    };
    assert_eq!(mirrored(vec![]), (0, ("False", "RefNotPermitted")));
    assert_eq!(
        mirrored(vec![grant("HTTPRoute", "app", "Service", Some("shared"))]),
        (1, ("True", "ResolvedRefs"))
    );
}

#[test]
fn a_grant_in_the_wrong_namespace_grants_nothing() {
    let misplaced = match grant("HTTPRoute", "app", "Service", None) {
        Object::ReferenceGrant(mut g) => {
            g.key = key("app", "misplaced");
            Object::ReferenceGrant(g)
        }
        other => other,
    };
    assert_eq!(resolved_with(vec![misplaced]), ("False", "RefNotPermitted"));
}

#[test]
fn certificates_in_other_namespaces_need_a_grant_from_the_gateway() {
    let listeners = || vec![https_listener("https", "cert", Some("other"))];
    let without = store([gateway(listeners()), tls_secret("other", "cert")]);
    let refused = routing(&without);
    let status = listener_status(&refused, "https");
    assert_eq!(
        state(&status.conditions, "ResolvedRefs"),
        ("False", "RefNotPermitted")
    );
    assert_eq!(
        state(&status.conditions, "Programmed"),
        ("False", "Invalid")
    );
    assert!(refused.table.gateways[0].listeners.is_empty());

    let with = store([
        gateway(listeners()),
        tls_secret("other", "cert"),
        grant("Gateway", "infra", "Secret", Some("cert")),
    ]);
    let routing = routing(&with);
    let entry = listener_entry(&routing, "https");
    let tls = entry.tls.as_ref().expect("tls");
    assert_eq!(tls.certificates, vec![key("other", "cert")]);
    assert!(
        routing
            .table
            .certificates
            .contains_key(&key("other", "cert"))
    );
}

#[test]
fn grants_name_the_route_kind_that_uses_them() {
    use hawser_model::{StreamRouteRule, TlsRoute};
    let tls_route = Object::TlsRoute(TlsRoute {
        meta: meta("app", "web", &["a.example.com"]),
        rules: vec![StreamRouteRule {
            name: None,
            backend_refs: vec![backend(Some("other"), "shared", 1)],
        }],
    });
    let resolved = |grants: Vec<Object>| {
        let objects = [
            gateway(vec![listener("tls", 443, "TLS")]),
            service("other", "shared"),
            tls_route.clone(),
        ];
        let routing = routing(&store(objects.into_iter().chain(grants)));
        state(
            &parent_conditions(&routing, Kind::TlsRoute, "web", 0),
            "ResolvedRefs",
        )
    };
    assert_eq!(
        resolved(vec![grant("HTTPRoute", "app", "Service", None)]),
        ("False", "RefNotPermitted")
    );
    assert_eq!(
        resolved(vec![grant("TLSRoute", "app", "Service", None)]),
        ("True", "ResolvedRefs")
    );
}
