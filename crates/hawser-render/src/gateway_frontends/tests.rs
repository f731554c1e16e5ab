use hawser_model::{PathMatch, PathMatchKind, RequestRedirect};

use super::*;

fn condition_text(c: &Condition) -> String {
    format!(
        "{}{} {} {:?}",
        if c.negate { "!" } else { "" },
        c.fetch,
        c.matcher,
        c.value
    )
}

#[test]
fn a_prefix_matches_whole_segments_and_slash_matches_all() {
    let prefix = |value: &str| {
        conditions::path(&PathMatch {
            kind: PathMatchKind::PathPrefix,
            value: value.to_string(),
        })
    };
    assert_eq!(prefix("/"), None);
    let foo = prefix("/foo/").expect("a condition");
    assert_eq!(
        condition_text(&foo),
        "var(txn.gw_slashed_path) -m beg Some(\"/foo/\")"
    );
    let regex = conditions::path(&PathMatch {
        kind: PathMatchKind::RegularExpression,
        value: "/v[0-9]+".to_string(),
    })
    .expect("a condition");
    assert_eq!(regex.value.as_deref(), Some("^(/v[0-9]+)$"));
}

#[test]
fn wildcard_hosts_match_any_number_of_labels() {
    let wildcard = conditions::host(Some("*.example.com")).expect("a condition");
    assert_eq!(wildcard.matcher, "-m end");
    assert_eq!(wildcard.value.as_deref(), Some(".example.com"));
    assert!(conditions::host(None).is_none());
}

#[test]
fn log_format_literals_keep_percent_signs() {
    assert_eq!(log_format_literal("/a%20b"), "/a%%20b");
}

fn listener(port: u16, protocol: ListenerProtocol) -> ListenerEntry {
    ListenerEntry::new("l", port, protocol)
}

fn location(r: RequestRedirect, listener: &ListenerEntry) -> String {
    let mut rule = RuleView::new("r1".to_string(), 0, String::new(), Vec::new());
    let ctx = actions::FilterContext {
        listener,
        prefix: Some("/foo".to_string()),
    };
    let redirects = actions::add_filters(
        &mut rule,
        &[crate::gateway::FilterEntry::RequestRedirect(r)],
        &[],
        &ctx,
    );
    assert!(redirects);
    match rule.request.last().map(|a| &a.step) {
        Some(Step::Redirect { location, .. }) => location.clone(),
        other => panic!("no redirect: {other:?}"),
    }
}

#[test]
fn redirect_ports_follow_the_scheme_and_the_listener() {
    let redirect = |scheme: Option<&str>, port: Option<i32>| RequestRedirect {
        scheme: scheme.map(str::to_string),
        hostname: Some("example.org".to_string()),
        path: None,
        port,
        status_code: 302,
    };
    let http80 = listener(80, ListenerProtocol::Http);
    let http8080 = listener(8080, ListenerProtocol::Http);
    assert_eq!(
        location(redirect(None, None), &http80),
        "http://example.org%[pathq]"
    );
    assert_eq!(
        location(redirect(None, None), &http8080),
        "http://example.org:8080%[pathq]"
    );
    assert_eq!(
        location(redirect(Some("https"), None), &http8080),
        "https://example.org%[pathq]"
    );
    assert_eq!(
        location(redirect(Some("https"), Some(8443)), &http80),
        "https://example.org:8443%[pathq]"
    );
    assert_eq!(
        location(redirect(None, Some(80)), &http80),
        "http://example.org%[pathq]"
    );
}

#[test]
fn weights_own_consecutive_ranges_and_zero_owns_none() {
    use crate::gateway::{BackendTarget, WeightedBackend};
    let service = |name: &str, weight| WeightedBackend::to_service(name, 80, weight);
    let unresolved = WeightedBackend {
        target: BackendTarget::Unresolved {
            reason: "gone".to_string(),
        },
        weight: 1,
        filters: Vec::new(),
    };
    let mut rule = RuleView::new("r1".to_string(), 0, String::new(), Vec::new());
    let http80 = listener(80, ListenerProtocol::Http);
    let ctx = actions::FilterContext {
        listener: &http80,
        prefix: None,
    };
    let backends = [
        service("a", 3),
        service("zero", 0),
        unresolved,
        service("b", 1),
    ];
    weighted(&mut rule, &backends, &[], &ctx, H2_SUFFIX);
    assert_eq!(rule.pick, Some(5));
    let ranges: Vec<(String, Vec<String>)> = rule
        .backends
        .iter()
        .map(|c| {
            let values = c.when.iter().filter_map(|w| w.value.clone()).collect();
            (c.backend.clone(), values)
        })
        .collect();
    assert_eq!(
        ranges,
        [
            (
                "be_app_a_80_h2".to_string(),
                vec!["0".to_string(), "3".to_string()]
            ),
            (
                "be_app_b_80_h2".to_string(),
                vec!["4".to_string(), "5".to_string()]
            ),
        ]
    );
    assert_eq!(rule.request.len(), 1);
    assert_eq!(rule.request[0].step, Step::Return { status: 500 });
}

#[test]
fn a_single_backend_needs_no_pick() {
    let mut rule = RuleView::new("r1".to_string(), 0, String::new(), Vec::new());
    let http80 = listener(80, ListenerProtocol::Http);
    let ctx = actions::FilterContext {
        listener: &http80,
        prefix: None,
    };
    let backend = crate::gateway::WeightedBackend::to_service("a", 80, 7);
    weighted(&mut rule, &[backend], &[], &ctx, "");
    assert_eq!(rule.pick, None);
    assert_eq!(rule.backends.len(), 1);
    assert!(rule.backends[0].when.is_empty());
}

#[test]
fn a_listener_on_a_port_already_bound_is_not_served() {
    let mut table = GatewayTable::default();
    let mut https_on_80 = listener(80, ListenerProtocol::Https);
    https_on_80.name = "wrong".to_string();
    let health = listener(8404, ListenerProtocol::Http);
    let own = listener(8080, ListenerProtocol::Http);
    table.gateways.push(crate::gateway::GatewayEntry {
        gateway: hawser_model::ObjectKey::new("app", "gw"),
        class_name: "hawser".to_string(),
        listeners: vec![https_on_80, health, own],
    });
    let settings = Settings {
        health_port: Some(8404),
        ..Settings::default()
    };
    let mut diags = Diagnostics::default();
    let view = gateway_view(&table, &[], &settings, &mut diags);
    let ports: Vec<u16> = view.frontends.iter().map(|f| f.port).collect();
    assert_eq!(ports, [8080]);
    let warnings = diags.finish();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].message.contains("cannot be served"),
        "{warnings:?}"
    );
}
