//! parentRefs attach by sectionName and port to listeners whose
//! allowedRoutes admit the route's namespace and kind.

use hawser_model::{
    LabelSelector, Namespace, RouteGroupKind, RouteNamespaces, StreamRouteRule, TlsRoute,
};

use super::*;

fn route_with_parent(name: &str, section: Option<&str>, port: Option<i32>) -> Object {
    let mut meta = meta("app", name, &[]);
    meta.parent_refs[0].section_name = section.map(str::to_string);
    meta.parent_refs[0].port = port;
    Object::HttpRoute(HttpRoute {
        meta,
        rules: vec![rule(
            vec![HttpRouteMatch::default()],
            vec![backend(None, "web", 1)],
        )],
    })
}

fn allowing(mut l: Listener, namespaces: RouteNamespaces) -> Listener {
    l.allowed_routes.namespaces = namespaces;
    l
}

#[test]
fn section_name_and_port_pick_listeners() {
    let store = store([
        gateway(
            vec![listener("a", 8080, "HTTP"), listener("b", 8081, "HTTP")]
                .into_iter()
                .map(|l| allowing(l, RouteNamespaces::All))
                .collect(),
        ),
        route_with_parent("by-name", Some("b"), None),
        route_with_parent("by-port", None, Some(8080)),
        route_with_parent("both", Some("a"), Some(8080)),
        route_with_parent("all", None, None),
        route_with_parent("no-such-name", Some("c"), None),
        route_with_parent("wrong-port", Some("a"), Some(8081)),
    ]);
    let routing = routing(&store);
    let routes_on = |name: &str| -> Vec<String> {
        listener_entry(&routing, name)
            .http_rules
            .iter()
            .map(|e| e.route.name.clone())
            .collect()
    };
    assert_eq!(routes_on("a"), ["all", "both", "by-port"]);
    assert_eq!(routes_on("b"), ["all", "by-name"]);
    assert_eq!(listener_status(&routing, "a").attached_routes, 3);
    for refused in ["no-such-name", "wrong-port"] {
        let conditions = parent_conditions(&routing, Kind::HttpRoute, refused, 0);
        assert_eq!(
            state(&conditions, "Accepted"),
            ("False", "NoMatchingParent"),
            "{refused}"
        );
    }
}

#[test]
fn allowed_namespaces_same_all_and_selector() {
    let accepted = |namespaces: RouteNamespaces, extra: Vec<Object>| {
        let objects = [
            gateway(vec![allowing(listener("http", 80, "HTTP"), namespaces)]),
            route_with_parent("web", None, None),
        ];
        let store = store(objects.into_iter().chain(extra));
        let routing = routing(&store);
        state(
            &parent_conditions(&routing, Kind::HttpRoute, "web", 0),
            "Accepted",
        )
    };
    let refused = ("False", "NotAllowedByListeners");
    // The route is in `app`, the Gateway in `infra`.
    assert_eq!(accepted(RouteNamespaces::Same, vec![]), refused);
    assert_eq!(accepted(RouteNamespaces::All, vec![]), ("True", "Accepted"));
    let selector = |label: &str, value: &str| {
        RouteNamespaces::Selector(LabelSelector {
            match_labels: BTreeMap::from([(label.to_string(), value.to_string())]),
            match_expressions: Vec::new(),
        })
    };
    let mut app = Namespace::named("app");
    app.labels.insert("team".to_string(), "a".to_string());
    let app = Object::Namespace(app);
    assert_eq!(
        accepted(selector("team", "a"), vec![app.clone()]),
        ("True", "Accepted")
    );
    assert_eq!(accepted(selector("team", "b"), vec![app]), refused);
    // A namespace missing from the store still has its name label.
    assert_eq!(
        accepted(selector("kubernetes.io/metadata.name", "app"), vec![]),
        ("True", "Accepted")
    );
}

#[test]
fn route_kinds_must_be_allowed_and_carried() {
    let tls_route = Object::TlsRoute(TlsRoute {
        meta: meta("app", "passthrough", &["a.example.com"]),
        rules: vec![StreamRouteRule {
            name: None,
            backend_refs: vec![backend(None, "web", 1)],
        }],
    });
    let mut only_grpc = allowing(listener("http", 80, "HTTP"), RouteNamespaces::All);
    only_grpc.allowed_routes.kinds = vec![RouteGroupKind {
        group: GROUP.to_string(),
        kind: "GRPCRoute".to_string(),
    }];
    let store = store([
        gateway(vec![only_grpc]),
        tls_route,
        route_with_parent("web", None, None),
    ]);
    let routing = routing(&store);
    for (kind, name) in [(Kind::TlsRoute, "passthrough"), (Kind::HttpRoute, "web")] {
        let conditions = parent_conditions(&routing, kind, name, 0);
        assert_eq!(
            state(&conditions, "Accepted"),
            ("False", "NotAllowedByListeners")
        );
    }
    let status = listener_status(&routing, "http");
    assert_eq!(status.supported_kinds.len(), 1);
    assert_eq!(status.attached_routes, 0);
}

#[test]
fn a_kind_the_protocol_cannot_carry_is_invalid_route_kinds() {
    let mut l = listener("http", 80, "HTTP");
    l.allowed_routes.kinds = vec![
        RouteGroupKind {
            group: GROUP.to_string(),
            kind: "TCPRoute".to_string(),
        },
        RouteGroupKind {
            group: GROUP.to_string(),
            kind: "HTTPRoute".to_string(),
        },
    ];
    let store = store([gateway(vec![l])]);
    let routing = routing(&store);
    let status = listener_status(&routing, "http");
    assert_eq!(
        state(&status.conditions, "ResolvedRefs"),
        ("False", "InvalidRouteKinds")
    );
    assert_eq!(status.supported_kinds[0].kind, "HTTPRoute");
    assert_eq!(status.supported_kinds.len(), 1);
}

#[test]
fn routes_naming_other_gateways_are_not_reported() {
    let mut foreign = meta("app", "foreign", &[]);
    foreign.parent_refs[0].name = "not-ours".to_string();
    let store = store([
        gateway(vec![listener("http", 80, "HTTP")]),
        Object::HttpRoute(HttpRoute {
            meta: foreign,
            rules: Vec::new(),
        }),
    ]);
    let routing = routing(&store);
    assert!(routing.status.routes.is_empty());
}

#[test]
fn tls_routes_attach_to_passthrough_listeners_by_sni() {
    let passthrough = with_hostname(listener("tls", 8443, "TLS"), "*.example.com");
    let tls_route = |name: &str, hostnames: &[&str]| {
        Object::TlsRoute(TlsRoute {
            meta: meta("app", name, hostnames),
            rules: vec![StreamRouteRule {
                name: None,
                backend_refs: vec![backend(None, "web", 1)],
            }],
        })
    };
    let store = store([
        gateway(vec![passthrough, listener("http", 80, "HTTP")]),
        tls_route("db", &["db.example.com", "db.other.org"]),
        tls_route("wild", &["*.example.com"]),
    ]);
    let routing = routing(&store);
    let entry = listener_entry(&routing, "tls");
    let tls = entry.tls.as_ref().expect("passthrough");
    assert_eq!(tls.mode, hawser_model::TlsMode::Passthrough);
    let served: Vec<(&str, Option<&str>)> = entry
        .tls_routes
        .iter()
        .map(|r| (r.route.name.as_str(), r.hostname.as_deref()))
        .collect();
    assert_eq!(
        served,
        [
            ("db", Some("db.example.com")),
            ("wild", Some("*.example.com"))
        ]
    );
    assert_eq!(listener_status(&routing, "tls").attached_routes, 2);
    assert_eq!(listener_status(&routing, "http").attached_routes, 0);
}

#[test]
fn an_http_and_a_grpc_route_may_not_share_a_hostname_on_a_listener() {
    use hawser_model::{GrpcRoute, GrpcRouteRule};
    let http = |name: &str, hosts: &[&str], created: Option<&str>| {
        let mut meta = meta("app", name, hosts);
        meta.created = created.map(str::to_string);
        Object::HttpRoute(HttpRoute {
            meta,
            rules: vec![rule(
                vec![HttpRouteMatch::default()],
                vec![backend(None, "web", 1)],
            )],
        })
    };
    let grpc = |name: &str, hosts: &[&str], created: Option<&str>| {
        let mut meta = meta("app", name, hosts);
        meta.created = created.map(str::to_string);
        Object::GrpcRoute(GrpcRoute {
            meta,
            rules: vec![GrpcRouteRule {
                name: None,
                matches: vec![Default::default()],
                filters: Vec::new(),
                backend_refs: Vec::new(),
            }],
        })
    };
    let store = store([
        gateway(vec![listener("http", 80, "HTTP")]),
        // The GRPCRoute is older: it keeps a.example.com.
        grpc("grpc", &["a.example.com"], Some("2024-01-01T00:00:00Z")),
        http("web", &["*.example.com"], Some("2024-02-01T00:00:00Z")),
        http("other", &["b.other.org"], None),
    ]);
    let routing = routing(&store);
    let of = |kind, name| state(&parent_conditions(&routing, kind, name, 0), "Accepted");
    assert_eq!(of(Kind::GrpcRoute, "grpc"), ("True", "Accepted"));
    assert_eq!(
        of(Kind::HttpRoute, "web"),
        ("False", "NotAllowedByListeners")
    );
    assert_eq!(of(Kind::HttpRoute, "other"), ("True", "Accepted"));
    assert_eq!(listener_status(&routing, "http").attached_routes, 2);
}
