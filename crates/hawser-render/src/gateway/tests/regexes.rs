//! A regular expression PCRE2 refuses (as HAProxy compiles it) rejects the
//! route that carries it, and only that route: the rest renders and serves.

use super::*;
use crate::{RenderConfig, Renderer, Severity};

/// `route` in `namespace`, one rule matching `path` to that namespace's Service `web`.
fn route_in(namespace: &str, name: &str, path: HttpRouteMatch) -> Object {
    Object::HttpRoute(HttpRoute {
        meta: meta(namespace, name, &["shop.example.com"]),
        rules: vec![rule(vec![path], vec![backend(None, "web", 1)])],
    })
}

fn store_with_a_bad_regex() -> Store {
    store([
        gateway(vec![listener("http", 80, "HTTP")]),
        service("team", "web"),
        // regex_lite took `\x{100}`; PCRE2 without UTF, as HAProxy runs it, does not.
        route_in(
            "app",
            "bad",
            http_match(PathMatchKind::RegularExpression, r"/\x{100}"),
        ),
        route_in("team", "good", http_match(PathMatchKind::Exact, "/ok")),
    ])
}

#[test]
fn a_regex_pcre2_refuses_rejects_its_route_and_no_other() {
    let routing = routing(&store_with_a_bad_regex());
    let bad = parent_conditions(&routing, Kind::HttpRoute, "bad", 0);
    assert_eq!(state(&bad, "Accepted"), ("False", "UnsupportedValue"));
    let message = &condition(&bad, "Accepted").expect("Accepted").message;
    assert!(message.contains("does not compile with PCRE2"), "{message}");

    let served: Vec<&ObjectKey> = listener_entry(&routing, "http")
        .http_rules
        .iter()
        .map(|r| &r.route)
        .collect();
    assert_eq!(served, [&key("team", "good")]);
}

#[test]
fn the_render_names_the_route_and_writes_nothing_of_its_regex() {
    let rendered = Renderer::new(RenderConfig::default())
        .expect("renderer")
        .render(&store_with_a_bad_regex())
        .expect("render");
    let rejected: Vec<String> = rendered
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Rejected)
        .map(ToString::to_string)
        .collect();
    assert_eq!(rejected.len(), 1, "{rejected:#?}");
    assert!(
        rejected[0].starts_with("rejected: HTTPRoute app/bad: ")
            && rejected[0].contains(r#""/\\x{100}" does not compile"#),
        "{rejected:#?}"
    );
    let mut good_served = false;
    for (path, file) in rendered.files.iter() {
        let text = String::from_utf8_lossy(&file.content);
        assert!(!text.contains("x{100}"), "{path} holds the refused regex");
        good_served |= text.contains("shop.example.com") && text.contains("/ok");
    }
    assert!(good_served, "team/good is in no rendered file");
}
