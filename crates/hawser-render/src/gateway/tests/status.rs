//! Conditions of classes, Gateways and listeners, and how routes report them.

use super::*;

#[test]
fn an_owned_class_and_gateway_are_accepted_and_programmed() {
    let store = store([
        gateway(vec![
            listener("http", 80, "HTTP"),
            https_listener("https", "cert", None),
        ]),
        tls_secret("infra", "cert"),
        Object::GatewayClass(GatewayClass {
            name: "other".to_string(),
            controller_name: "example.com/other".to_string(),
            generation: None,
        }),
    ]);
    let routing = routing(&store);
    let classes: Vec<&str> = routing
        .status
        .classes
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(classes, ["hawser"]);
    assert_eq!(
        state(&routing.status.classes[0].conditions, "Accepted"),
        ("True", "Accepted")
    );
    let gateway = &routing.status.gateways[0];
    assert_eq!(state(&gateway.conditions, "Accepted"), ("True", "Accepted"));
    assert_eq!(
        state(&gateway.conditions, "Programmed"),
        ("True", "Programmed")
    );
    assert!(
        gateway
            .conditions
            .iter()
            .all(|c| c.observed_generation == Some(2))
    );
    for name in ["http", "https"] {
        let conditions = &listener_status(&routing, name).conditions;
        assert_eq!(state(conditions, "Accepted"), ("True", "Accepted"));
        assert_eq!(state(conditions, "ResolvedRefs"), ("True", "ResolvedRefs"));
        assert_eq!(state(conditions, "Conflicted"), ("False", "NoConflicts"));
        assert_eq!(state(conditions, "Programmed"), ("True", "Programmed"));
    }
    let kinds: Vec<&str> = listener_status(&routing, "http")
        .supported_kinds
        .iter()
        .map(|k| k.kind.as_str())
        .collect();
    assert_eq!(kinds, ["HTTPRoute", "GRPCRoute"]);
}

#[test]
fn gateways_of_other_classes_are_ignored() {
    let mut other = match gateway(vec![listener("http", 80, "HTTP")]) {
        Object::Gateway(g) => g,
        _ => unreachable!(),
    };
    other.class_name = "unknown".to_string();
    let store = store([Object::Gateway(other)]);
    let routing = routing(&store);
    assert!(routing.status.gateways.is_empty());
    assert!(routing.table.gateways.is_empty());
    assert!(
        routing
            .diagnostics
            .iter()
            .all(|d| d.severity == crate::Severity::Ignored)
    );
}

#[test]
fn bad_listeners_say_why_and_the_gateway_lists_them() {
    let store = store([gateway(vec![
        listener("http", 80, "HTTP"),
        listener("udp", 53, "UDP"),
        https_listener("https", "missing", None),
        listener("dup-a", 8080, "HTTP"),
        listener("dup-b", 8080, "HTTP"),
        listener("mixed", 80, "TCP"),
    ])]);
    let routing = routing(&store);
    let of = |name: &str| listener_status(&routing, name).conditions.clone();
    assert_eq!(
        state(&of("udp"), "Accepted"),
        ("False", "UnsupportedProtocol")
    );
    assert_eq!(
        state(&of("https"), "ResolvedRefs"),
        ("False", "InvalidCertificateRef")
    );
    assert_eq!(
        state(&of("dup-a"), "Conflicted"),
        ("True", "HostnameConflict")
    );
    assert_eq!(
        state(&of("dup-b"), "Conflicted"),
        ("True", "HostnameConflict")
    );
    assert_eq!(
        state(&of("mixed"), "Conflicted"),
        ("True", "ProtocolConflict")
    );
    assert_eq!(
        state(&of("http"), "Conflicted"),
        ("True", "ProtocolConflict")
    );
    assert_eq!(
        state(&of("dup-a"), "Accepted"),
        ("False", "HostnameConflict")
    );
    for name in ["udp", "https", "dup-a", "mixed"] {
        assert_eq!(
            state(&of(name), "Programmed"),
            ("False", "Invalid"),
            "{name}"
        );
    }
    let gateway = &routing.status.gateways[0];
    assert_eq!(
        state(&gateway.conditions, "Accepted"),
        ("False", "ListenersNotValid")
    );
    assert_eq!(
        state(&gateway.conditions, "Programmed"),
        ("False", "Invalid")
    );
}

#[test]
fn a_route_reports_per_parent_with_its_generation() {
    let mut route = meta("app", "web", &[]);
    let mut unknown_section = parent();
    unknown_section.section_name = Some("nope".to_string());
    route.parent_refs.push(unknown_section);
    let mut l = listener("http", 80, "HTTP");
    l.allowed_routes.namespaces = hawser_model::RouteNamespaces::All;
    let store = store([
        gateway(vec![l]),
        Object::HttpRoute(HttpRoute {
            meta: route,
            rules: vec![rule(
                vec![HttpRouteMatch::default()],
                vec![backend(None, "web", 1)],
            )],
        }),
    ]);
    let routing = routing(&store);
    let status = &routing.status.routes[0];
    assert_eq!(status.parents.len(), 2);
    assert_eq!(status.parents[0].controller_name, GATEWAY_CONTROLLER);
    let first = &status.parents[0].conditions;
    assert_eq!(state(first, "Accepted"), ("True", "Accepted"));
    assert_eq!(state(first, "ResolvedRefs"), ("True", "ResolvedRefs"));
    assert!(first.iter().all(|c| c.observed_generation == Some(5)));
    let second = &status.parents[1].conditions;
    assert_eq!(state(second, "Accepted"), ("False", "NoMatchingParent"));
    assert_eq!(listener_status(&routing, "http").attached_routes, 1);
}

#[test]
fn https_and_tls_passthrough_may_share_a_port_with_distinct_hostnames() {
    let on_443 = |https_host: &str, tls_host: &str| {
        let https = with_hostname(https_listener("https", "cert", None), https_host);
        let tls = with_hostname(listener("tls", 443, "TLS"), tls_host);
        routing(&store([
            gateway(vec![https, tls]),
            tls_secret("infra", "cert"),
        ]))
    };
    let distinct = on_443("*.example.com", "abc.example.com");
    for name in ["https", "tls"] {
        let conditions = &listener_status(&distinct, name).conditions;
        assert_eq!(
            state(conditions, "Conflicted"),
            ("False", "NoConflicts"),
            "{name}"
        );
        assert_eq!(
            state(conditions, "Programmed"),
            ("True", "Programmed"),
            "{name}"
        );
    }
    let same = on_443("a.example.com", "a.example.com");
    let conditions = &listener_status(&same, "tls").conditions;
    assert_eq!(
        state(conditions, "Conflicted"),
        ("True", "HostnameConflict")
    );
}

#[test]
fn listener_values_hawser_cannot_serve_are_not_accepted() {
    let mut https_passthrough = https_listener("https", "cert", None);
    if let Some(tls) = https_passthrough.tls.as_mut() {
        tls.mode = hawser_model::TlsMode::Passthrough;
    }
    let bad_host = with_hostname(listener("host", 8080, "HTTP"), "a b.example.com");
    let store = store([
        gateway(vec![
            https_passthrough,
            bad_host,
            listener("port", 0, "HTTP"),
        ]),
        tls_secret("infra", "cert"),
    ]);
    let routing = routing(&store);
    let of = |name: &str| state(&listener_status(&routing, name).conditions, "Accepted");
    assert_eq!(of("https"), ("False", "UnsupportedValue"));
    assert_eq!(of("host"), ("False", "UnsupportedValue"));
    assert_eq!(of("port"), ("False", "PortUnavailable"));
    assert!(routing.table.gateways[0].listeners.is_empty());
    let warned: Vec<&str> = routing
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(warned.len(), 3, "{warned:?}");
}
