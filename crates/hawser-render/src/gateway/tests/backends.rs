//! Weighted backends: weight 0, unresolved references answering 500, mirrors,
//! and rules dropped for values that could not reach HAProxy safely.

use hawser_model::{
    HeaderModifier, HttpFilter, MirrorFraction, PathModifier, RequestMirror, RequestRedirect,
    StreamRouteRule, TcpRoute,
};

use super::*;

fn route_with(rules: Vec<HttpRouteRule>) -> Store {
    store([
        gateway(
            vec![listener("http", 80, "HTTP")]
                .into_iter()
                .map(|mut l| {
                    l.allowed_routes.namespaces = hawser_model::RouteNamespaces::All;
                    l
                })
                .collect(),
        ),
        Object::HttpRoute(HttpRoute {
            meta: meta("app", "web", &[]),
            rules,
        }),
    ])
}

#[test]
fn weight_zero_is_kept_and_all_zero_answers_500() {
    let store = route_with(vec![
        rule(
            vec![http_match(PathMatchKind::Exact, "/split")],
            vec![backend(None, "web", 0), backend(None, "api", 3)],
        ),
        rule(
            vec![http_match(PathMatchKind::Exact, "/zero")],
            vec![backend(None, "web", 0)],
        ),
    ]);
    let routing = routing(&store);
    let rules = &listener_entry(&routing, "http").http_rules;
    let weights: Vec<u32> = rules[0].backends.iter().map(|b| b.weight).collect();
    assert_eq!(weights, [0, 3]);
    assert!(!rules[0].unavailable);
    assert!(rules[1].unavailable, "every weight 0: 500");
    assert_eq!(routing.table.backends.len(), 2);
}

#[test]
fn an_unresolved_backend_answers_500_for_its_share() {
    let mut not_a_service = backend(None, "bucket", 1);
    not_a_service.kind = "Bucket".to_string();
    not_a_service.group = "storage.example.com".to_string();
    let store = route_with(vec![
        rule(
            vec![http_match(PathMatchKind::Exact, "/missing")],
            vec![backend(None, "missing", 1), backend(None, "web", 1)],
        ),
        rule(
            vec![http_match(PathMatchKind::Exact, "/kind")],
            vec![not_a_service],
        ),
        rule(vec![http_match(PathMatchKind::Exact, "/none")], vec![]),
    ]);
    let routing = routing(&store);
    let rules = &listener_entry(&routing, "http").http_rules;
    let paths: Vec<&str> = rules.iter().map(|r| r.path.value.as_str()).collect();
    assert_eq!(paths, ["/missing", "/kind", "/none"]);
    let missing = &rules[0];
    assert!(matches!(
        missing.backends[0].target,
        BackendTarget::Unresolved { .. }
    ));
    assert!(matches!(
        missing.backends[1].target,
        BackendTarget::Service { .. }
    ));
    assert!(!missing.unavailable, "half goes to web, half answers 500");
    assert!(rules[1].unavailable, "{:?}", rules[1].path);
    assert!(rules[2].unavailable, "{:?}", rules[2].path);
    let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
    assert_eq!(state(&conditions, "Accepted"), ("True", "Accepted"));
    assert_eq!(
        state(&conditions, "ResolvedRefs"),
        ("False", "BackendNotFound")
    );
    assert!(
        routing
            .diagnostics
            .iter()
            .any(|d| d.message.contains("answers 500"))
    );
}

#[test]
fn an_unsupported_kind_is_invalid_kind() {
    let mut bucket = backend(None, "bucket", 1);
    bucket.kind = "Bucket".to_string();
    let store = route_with(vec![rule(vec![HttpRouteMatch::default()], vec![bucket])]);
    let routing = routing(&store);
    let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
    assert_eq!(state(&conditions, "ResolvedRefs"), ("False", "InvalidKind"));
}

/// A rule to `web` on `/mirror` that mirrors to `to`.
fn mirrored(to: BackendRef, fraction: MirrorFraction) -> HttpRouteRule {
    let mut r = rule(
        vec![http_match(PathMatchKind::PathPrefix, "/mirror")],
        vec![backend(None, "web", 1)],
    );
    r.filters.push(HttpFilter::RequestMirror(RequestMirror {
        backend: to,
        fraction,
    }));
    r
}

fn mirrors_of(entry: &HttpRuleEntry) -> Vec<&MirrorEntry> {
    entry
        .filters
        .iter()
        .filter_map(|f| match f {
            FilterEntry::RequestMirror(m) => Some(m),
            _ => None,
        })
        .collect()
}

#[test]
fn a_mirror_sends_to_a_backend_of_its_own() {
    let quarter = MirrorFraction {
        numerator: 1,
        denominator: 4,
    };
    let routing = routing(&route_with(vec![mirrored(
        backend(None, "api", 1),
        quarter,
    )]));
    let entry = &listener_entry(&routing, "http").http_rules[0];
    let mirrors = mirrors_of(entry);
    assert_eq!(mirrors.len(), 1);
    assert_eq!(mirrors[0].backend, "be_app_api_80");
    assert_eq!(mirrors[0].fraction, quarter);
    assert!(!entry.unavailable);
    // The mirror's Service port becomes an HAProxy backend like any other.
    let used: Vec<String> = routing.table.backends.keys().map(|k| k.name()).collect();
    assert_eq!(used, ["be_app_api_80", "be_app_web_80"]);
    let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
    assert_eq!(state(&conditions, "Accepted"), ("True", "Accepted"));
    assert_eq!(state(&conditions, "ResolvedRefs"), ("True", "ResolvedRefs"));
    assert_eq!(state(&conditions, "PartiallyInvalid"), ("absent", ""));
}

#[test]
fn an_unresolvable_mirror_is_dropped_and_the_rule_serves_without_it() {
    let mut bucket = backend(None, "bucket", 1);
    bucket.kind = "Bucket".to_string();
    for (to, reason) in [
        (backend(None, "missing", 1), "BackendNotFound"),
        (bucket, "InvalidKind"),
    ] {
        let routing = routing(&route_with(vec![mirrored(to, MirrorFraction::ALL)]));
        let entry = &listener_entry(&routing, "http").http_rules[0];
        assert!(mirrors_of(entry).is_empty(), "{reason}");
        assert!(!entry.unavailable, "{reason}: the rule still serves");
        let used: Vec<String> = routing.table.backends.keys().map(|k| k.name()).collect();
        assert_eq!(used, ["be_app_web_80"], "{reason}");
        let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
        assert_eq!(state(&conditions, "Accepted"), ("True", "Accepted"));
        assert_eq!(state(&conditions, "ResolvedRefs"), ("False", reason));
        let message = &condition(&conditions, "ResolvedRefs")
            .expect("ResolvedRefs")
            .message;
        assert!(message.starts_with("requestMirror: "), "{message}");
        assert!(
            routing
                .diagnostics
                .iter()
                .any(|d| d.message.contains("serves without that mirror")),
            "{:?}",
            routing.diagnostics
        );
    }
}

#[test]
fn a_grpc_rule_may_not_mirror() {
    use hawser_model::{GrpcRoute, GrpcRouteRule};
    let store = store([
        gateway(vec![listener("http", 80, "HTTP")]),
        Object::GrpcRoute(GrpcRoute {
            meta: meta("app", "grpc", &[]),
            rules: vec![GrpcRouteRule {
                name: None,
                matches: vec![Default::default()],
                filters: vec![HttpFilter::RequestMirror(RequestMirror {
                    backend: backend(None, "api", 1),
                    fraction: MirrorFraction::ALL,
                })],
                backend_refs: Vec::new(),
            }],
        }),
    ]);
    let routing = routing(&store);
    let conditions = parent_conditions(&routing, Kind::GrpcRoute, "grpc", 0);
    assert_eq!(
        state(&conditions, "Accepted"),
        ("False", "UnsupportedValue")
    );
}

#[test]
fn a_bad_rule_is_dropped_and_the_route_partially_invalid() {
    let mut hostile = rule(
        vec![HttpRouteMatch::default()],
        vec![backend(None, "web", 1)],
    );
    hostile
        .filters
        .push(HttpFilter::RequestHeaderModifier(HeaderModifier {
            set: vec![("x-a".to_string(), "v\"\n  http-request deny".to_string())],
            ..HeaderModifier::default()
        }));
    let good = rule(
        vec![http_match(PathMatchKind::Exact, "/ok")],
        vec![backend(None, "api", 1)],
    );
    let routing = routing(&route_with(vec![hostile, good]));
    let rules = &listener_entry(&routing, "http").http_rules;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].rule_index, 1);
    let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
    assert_eq!(state(&conditions, "Accepted"), ("True", "Accepted"));
    assert_eq!(
        state(&conditions, "PartiallyInvalid"),
        ("True", "UnsupportedValue")
    );
    // Only the good rule's backend is used.
    let used: Vec<String> = routing.table.backends.keys().map(|k| k.name()).collect();
    assert_eq!(used, ["be_app_api_80"]);
}

#[test]
fn a_route_with_only_bad_rules_is_not_accepted() {
    let redirect = |status_code, path| {
        let mut r = rule(vec![http_match(PathMatchKind::Exact, "/a")], vec![]);
        r.filters.push(HttpFilter::RequestRedirect(RequestRedirect {
            scheme: None,
            hostname: None,
            path,
            port: None,
            status_code,
        }));
        r
    };
    for bad in [
        redirect(418, None),
        // ReplacePrefixMatch needs a PathPrefix match.
        redirect(
            301,
            Some(PathModifier::ReplacePrefixMatch("/b".to_string())),
        ),
        rule(vec![http_match(PathMatchKind::Exact, "/a b")], vec![]),
        rule(
            vec![http_match(PathMatchKind::RegularExpression, "/a\"")],
            vec![],
        ),
    ] {
        let routing = routing(&route_with(vec![bad]));
        let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
        assert_eq!(
            state(&conditions, "Accepted"),
            ("False", "UnsupportedValue")
        );
        assert!(routing.table.gateways[0].listeners[0].http_rules.is_empty());
        assert_eq!(listener_status(&routing, "http").attached_routes, 0);
    }
    // A valid redirect answers by itself: not unavailable without backends.
    let routing = routing(&route_with(vec![redirect(301, None)]));
    assert!(!listener_entry(&routing, "http").http_rules[0].unavailable);
}

#[test]
fn tcp_routes_on_a_tcp_listener_oldest_first() {
    let tcp = |name: &str, created: Option<&str>| {
        let mut meta = meta("app", name, &[]);
        meta.created = created.map(str::to_string);
        Object::TcpRoute(TcpRoute {
            meta,
            rules: vec![StreamRouteRule {
                name: None,
                backend_refs: vec![backend(None, "web", 1)],
            }],
        })
    };
    let mut l = listener("db", 5432, "TCP");
    l.allowed_routes.namespaces = hawser_model::RouteNamespaces::All;
    let store = store([
        gateway(vec![l]),
        tcp("a-new", None),
        tcp("b-old", Some("2024-01-01T00:00:00Z")),
    ]);
    let routing = routing(&store);
    let routes: Vec<&str> = listener_entry(&routing, "db")
        .tcp_routes
        .iter()
        .map(|r| r.route.name.as_str())
        .collect();
    assert_eq!(routes, ["b-old", "a-new"]);
}

#[test]
fn an_extension_ref_filter_answers_500_rather_than_being_skipped() {
    let mut r = rule(
        vec![HttpRouteMatch::default()],
        vec![backend(None, "web", 1)],
    );
    r.filters
        .push(HttpFilter::Unsupported("ExtensionRef".to_string()));
    let routing = routing(&route_with(vec![r]));
    let entry = &listener_entry(&routing, "http").http_rules[0];
    assert!(entry.unavailable);
    let conditions = parent_conditions(&routing, Kind::HttpRoute, "web", 0);
    assert_eq!(state(&conditions, "Accepted"), ("True", "Accepted"));
    assert_eq!(state(&conditions, "ResolvedRefs"), ("False", "InvalidKind"));
}

#[test]
fn unsupported_or_repeated_filters_drop_the_rule() {
    let with = |filters: Vec<HttpFilter>| {
        let mut r = rule(
            vec![HttpRouteMatch::default()],
            vec![backend(None, "web", 1)],
        );
        r.filters = filters;
        let routing = routing(&route_with(vec![r]));
        state(
            &parent_conditions(&routing, Kind::HttpRoute, "web", 0),
            "Accepted",
        )
    };
    let modifier = || HttpFilter::RequestHeaderModifier(HeaderModifier::default());
    assert_eq!(with(vec![modifier()]), ("True", "Accepted"));
    let refused = ("False", "UnsupportedValue");
    assert_eq!(with(vec![modifier(), modifier()]), refused);
    assert_eq!(
        with(vec![HttpFilter::Unsupported("CORS".to_string())]),
        refused
    );
}

#[test]
fn the_backends_used_become_haproxy_backends() {
    let store = route_with(vec![rule(
        vec![HttpRouteMatch::default()],
        vec![backend(None, "web", 1), backend(None, "api", 1)],
    )]);
    let routing = routing(&store);
    let mut diags = crate::report::Diagnostics::default();
    let plans = crate::backends::backend_plans(
        &store,
        &crate::config::Settings::default(),
        &routing.table.backends,
        &mut Default::default(),
        &mut Default::default(),
        &mut diags,
    );
    let names: Vec<&str> = plans.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["be_app_api_80", "be_app_web_80"]);
    let targets: Vec<&BackendTarget> = listener_entry(&routing, "http").http_rules[0]
        .backends
        .iter()
        .map(|b| &b.target)
        .collect();
    assert!(
        matches!(targets[0], BackendTarget::Service { backend, .. } if backend == "be_app_web_80")
    );
}

#[test]
fn timeouts_are_kept_and_a_backend_timeout_past_the_request_timeout_drops_the_rule() {
    let timed = |request, backend| {
        let mut r = rule(vec![HttpRouteMatch::default()], vec![backend_ref()]);
        r.timeouts = HttpTimeouts {
            request_ms: request,
            backend_request_ms: backend,
        };
        routing(&route_with(vec![r]))
    };
    fn backend_ref() -> BackendRef {
        backend(None, "web", 1)
    }
    let ok = timed(Some(10_000), Some(2_000));
    assert_eq!(
        listener_entry(&ok, "http").http_rules[0]
            .timeouts
            .backend_request_ms,
        Some(2_000)
    );
    let bad = timed(Some(1_000), Some(2_000));
    let conditions = parent_conditions(&bad, Kind::HttpRoute, "web", 0);
    assert_eq!(
        state(&conditions, "Accepted"),
        ("False", "UnsupportedValue")
    );
    // A disabled request timeout (0) bounds nothing.
    let unbounded = timed(Some(0), Some(2_000));
    assert_eq!(listener_entry(&unbounded, "http").http_rules.len(), 1);
}
