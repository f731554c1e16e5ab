use hawser_model::{HttpTimeouts, ObjectKey, PathMatch, ValueMatch, ValueMatchKind};

use super::*;
use crate::gateway::{FilterEntry, WeightedBackend};
use hawser_plan::MatchKind;

fn service(name: &str, weight: u32) -> WeightedBackend {
    WeightedBackend::to_service(name, 80, weight)
}

fn rule(host: Option<&str>, kind: PathMatchKind, path: &str) -> HttpRuleEntry {
    HttpRuleEntry {
        route: ObjectKey::new("app", "web"),
        rule_index: 0,
        match_index: 0,
        hostname: host.map(str::to_string),
        path: PathMatch {
            kind,
            value: path.to_string(),
        },
        method: None,
        headers: Vec::new(),
        query_params: Vec::new(),
        filters: Vec::new(),
        backends: vec![service("web", 1)],
        timeouts: HttpTimeouts::default(),
        unavailable: false,
    }
}

fn header() -> ValueMatch {
    ValueMatch {
        name: "x-canary".to_string(),
        value: "1".to_string(),
        kind: ValueMatchKind::Exact,
    }
}

#[test]
fn ranks_order_as_the_spec_orders_rules() {
    use PathMatchKind::{Exact, PathPrefix, RegularExpression};
    let host = Some("a.example.com");
    let mut with_method = rule(host, PathPrefix, "/a");
    with_method.method = Some("GET".to_string());
    let mut with_header = rule(host, PathPrefix, "/a");
    with_header.headers.push(header());
    let mut with_two_headers = with_header.clone();
    with_two_headers.headers.push(header());
    let mut with_query = rule(host, PathPrefix, "/a");
    with_query.query_params.push(header());
    // Most specific first.
    let ordered = [
        rule(Some("long.a.example.com"), PathPrefix, "/"),
        rule(host, Exact, "/a"),
        rule(host, PathPrefix, "/a/b"),
        with_method,
        with_two_headers,
        with_header,
        with_query,
        rule(host, PathPrefix, "/a"),
        rule(host, RegularExpression, "/a.*"),
        rule(Some("*.long.example.com"), Exact, "/"),
        rule(Some("*.example.com"), Exact, "/"),
        rule(None, Exact, "/a"),
        rule(None, PathPrefix, "/"),
    ];
    let ranks: Vec<u64> = ordered.iter().map(rank).collect();
    for pair in ranks.windows(2) {
        assert!(pair[0] < pair[1], "{ranks:?}");
    }
    assert!(ranks.iter().all(|r| *r < GRPC_RANK), "{ranks:?}");
}

#[test]
fn only_rules_that_pick_one_backend_by_host_and_path_are_simple() {
    use PathMatchKind::{Exact, PathPrefix, RegularExpression};
    let host = Some("a.example.com");
    assert_eq!(
        simple_backend(&rule(host, PathPrefix, "/")),
        Some("be_app_web_80")
    );
    assert_eq!(
        simple_backend(&rule(None, Exact, "/x")),
        Some("be_app_web_80")
    );
    let mut weight_zero_beside = rule(host, PathPrefix, "/");
    weight_zero_beside.backends.push(service("off", 0));
    assert_eq!(simple_backend(&weight_zero_beside), Some("be_app_web_80"));

    let mut not_simple = Vec::new();
    not_simple.push(rule(Some("*.example.com"), PathPrefix, "/"));
    not_simple.push(rule(host, RegularExpression, "/.*"));
    let mut r = rule(host, PathPrefix, "/");
    r.method = Some("POST".to_string());
    not_simple.push(r);
    let mut r = rule(host, PathPrefix, "/");
    r.headers.push(header());
    not_simple.push(r);
    let mut r = rule(host, PathPrefix, "/");
    r.filters
        .push(FilterEntry::RequestHeaderModifier(Default::default()));
    not_simple.push(r);
    let mut r = rule(host, PathPrefix, "/");
    r.backends.push(service("canary", 1));
    not_simple.push(r);
    let mut r = rule(host, PathPrefix, "/");
    r.timeouts.request_ms = Some(500);
    not_simple.push(r);
    let mut r = rule(host, PathPrefix, "/");
    r.unavailable = true;
    not_simple.push(r);
    let mut r = rule(host, PathPrefix, "/");
    r.backends[0].target = BackendTarget::Unresolved {
        reason: "gone".to_string(),
    };
    not_simple.push(r);
    for r in &not_simple {
        assert_eq!(simple_backend(r), None, "{r:?}");
    }
}

#[test]
fn keys_follow_the_ingress_encoding_under_a_scope() {
    let mut map = GatewayMap::default();
    let scope = scope("ingress", ListenerProtocol::Http);
    let exact = rule(Some("a.example.com"), PathMatchKind::Exact, "/a");
    map.add(&scope, &exact, "be_exact");
    // The same key from a later (lower-precedence) rule is not taken.
    let prefix = rule(Some("a.example.com"), PathMatchKind::PathPrefix, "/a/");
    map.add(&scope, &prefix, "be_prefix");
    let any = rule(None, PathMatchKind::PathPrefix, "/");
    map.add(&scope, &any, "be_any");
    let plan = map.into_plan();
    assert_eq!(plan.path, GATEWAY_MAP_PATH);
    assert_eq!(plan.match_kind, MatchKind::Beg);
    let entries: Vec<(String, String)> = (plan.entries.iter())
        .map(|e| (e.key.to_string(), e.value.to_string()))
        .collect();
    assert_eq!(
        entries,
        [
            (
                "ingress.http@a.example.com/a/".to_string(),
                format!("{}:be_prefix;HTTPRoute/app/web", rank(&prefix))
            ),
            (
                "ingress.http@a.example.com/a|".to_string(),
                format!("{}:be_exact;HTTPRoute/app/web", rank(&exact))
            ),
            (
                "ingress.http@/".to_string(),
                format!("{}:be_any;HTTPRoute/app/web", rank(&any))
            ),
        ]
    );
}

#[test]
fn a_simple_rule_tying_an_acl_rule_on_its_hostname_is_noticed() {
    let mut map = GatewayMap::default();
    map.note_acl("ingress.http", 42, Some("a.example.com"));
    assert!(map.ties("ingress.http", 42, Some("a.example.com")));
    assert!(!map.ties("ingress.https", 42, Some("a.example.com")));
    assert!(!map.ties("ingress.http", 42, Some("b.example.com")));
    assert!(!map.ties("ingress.http", 43, Some("a.example.com")));
}
