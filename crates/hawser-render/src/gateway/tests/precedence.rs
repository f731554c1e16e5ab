//! Rules come out in the spec's precedence order, one tie-breaker at a time.

use hawser_model::{ValueMatch, ValueMatchKind};

use super::*;

/// `(route name, rule index)` of the HTTP listener's rules, in table order.
fn order(objects: Vec<Object>) -> Vec<(String, usize)> {
    let store = store(
        [gateway(vec![listener("http", 80, "HTTP")])]
            .into_iter()
            .chain(objects),
    );
    let routing = routing(&store);
    listener_entry(&routing, "http")
        .http_rules
        .iter()
        .map(|e| (e.route.name.clone(), e.rule_index))
        .collect()
}

fn names(order: &[(String, usize)]) -> Vec<&str> {
    order.iter().map(|(name, _)| name.as_str()).collect()
}

fn header(name: &str) -> ValueMatch {
    ValueMatch {
        name: name.to_string(),
        value: "1".to_string(),
        kind: ValueMatchKind::Exact,
    }
}

fn created(mut object: Object, at: &str) -> Object {
    if let Object::HttpRoute(route) = &mut object {
        route.meta.created = Some(at.to_string());
    }
    object
}

#[test]
fn exact_beats_the_longest_prefix_which_beats_shorter_ones_and_regexes() {
    let order = order(vec![
        http_route("a-short", vec![http_match(PathMatchKind::PathPrefix, "/a")]),
        http_route(
            "b-regex",
            vec![http_match(PathMatchKind::RegularExpression, "/a/b/c/.*")],
        ),
        http_route(
            "c-long",
            vec![http_match(PathMatchKind::PathPrefix, "/a/b")],
        ),
        http_route("d-exact", vec![http_match(PathMatchKind::Exact, "/a")]),
    ]);
    assert_eq!(names(&order), ["d-exact", "c-long", "a-short", "b-regex"]);
}

#[test]
fn then_method_then_more_headers_then_more_query_params() {
    let with = |method: bool, headers: usize, query: usize| {
        let mut m = http_match(PathMatchKind::PathPrefix, "/");
        m.method = method.then(|| "GET".to_string());
        m.headers = (0..headers).map(|i| header(&format!("h{i}"))).collect();
        m.query_params = (0..query).map(|i| header(&format!("q{i}"))).collect();
        m
    };
    let order = order(vec![
        http_route("a-plain", vec![with(false, 0, 0)]),
        http_route("b-query", vec![with(false, 1, 1)]),
        http_route("c-headers", vec![with(false, 2, 0)]),
        http_route("d-method", vec![with(true, 0, 0)]),
        http_route("e-one-header", vec![with(false, 1, 0)]),
    ]);
    assert_eq!(
        names(&order),
        [
            "d-method",
            "c-headers",
            "b-query",
            "e-one-header",
            "a-plain"
        ]
    );
}

#[test]
fn then_the_oldest_route_then_namespace_and_name_then_rule_order() {
    let prefix = || http_match(PathMatchKind::PathPrefix, "/");
    let order = order(vec![
        http_route("a-local", vec![prefix()]),
        created(
            http_route("b-newer", vec![prefix()]),
            "2024-02-01T00:00:00Z",
        ),
        created(
            http_route("c-older", vec![prefix()]),
            "2024-01-01T00:00:00Z",
        ),
        http_route("d-two-rules", vec![prefix(), prefix()]),
    ]);
    assert_eq!(
        order,
        [
            ("c-older".to_string(), 0),
            ("b-newer".to_string(), 0),
            ("a-local".to_string(), 0),
            ("d-two-rules".to_string(), 0),
            ("d-two-rules".to_string(), 1),
        ]
    );
}

#[test]
fn hostnames_order_first_exact_then_wildcard_then_any() {
    let route = |name: &str, hostnames: &[&str]| {
        Object::HttpRoute(HttpRoute {
            meta: meta("app", name, hostnames),
            rules: vec![rule(
                vec![http_match(PathMatchKind::Exact, "/exact")],
                vec![backend(None, "web", 1)],
            )],
        })
    };
    // Path precedence comes after hostname: the any-host Exact path is last.
    let mut objects = vec![
        route("a-any", &[]),
        route("b-wild", &["*.example.com"]),
        route("c-exact", &["a.example.com"]),
        route("d-longer-wild", &["*.b.example.com"]),
    ];
    objects.push(http_route(
        "e-prefix",
        vec![http_match(PathMatchKind::PathPrefix, "/")],
    ));
    let store = store(
        [gateway(vec![listener("http", 80, "HTTP")])]
            .into_iter()
            .chain(objects),
    );
    let routing = routing(&store);
    let hosts: Vec<Option<&str>> = listener_entry(&routing, "http")
        .http_rules
        .iter()
        .map(|e| e.hostname.as_deref())
        .collect();
    assert_eq!(
        hosts,
        [
            Some("a.example.com"),
            Some("*.b.example.com"),
            Some("*.example.com"),
            None,
            None
        ]
    );
}

#[test]
fn grpc_rules_order_by_service_then_method_length() {
    use hawser_model::{GrpcMethodMatch, GrpcRoute, GrpcRouteMatch, GrpcRouteRule};
    let route = |name: &str, service: Option<&str>, method: Option<&str>| {
        Object::GrpcRoute(GrpcRoute {
            meta: meta("app", name, &[]),
            rules: vec![GrpcRouteRule {
                name: None,
                matches: vec![GrpcRouteMatch {
                    method: Some(GrpcMethodMatch {
                        kind: ValueMatchKind::Exact,
                        service: service.map(str::to_string),
                        method: method.map(str::to_string),
                    }),
                    headers: Vec::new(),
                }],
                filters: Vec::new(),
                backend_refs: vec![HttpBackendRef {
                    backend: backend(None, "api", 1),
                    filters: Vec::new(),
                }],
            }],
        })
    };
    let store = store([
        gateway(vec![listener("http", 80, "HTTP")]),
        route("a-method-only", None, Some("Get")),
        route("b-service", Some("pkg.Echo"), None),
        route("c-both", Some("pkg.Echo"), Some("Get")),
    ]);
    let routing = routing(&store);
    let order: Vec<&str> = listener_entry(&routing, "http")
        .grpc_rules
        .iter()
        .map(|e| e.route.name.as_str())
        .collect();
    assert_eq!(order, ["c-both", "b-service", "a-method-only"]);
}
