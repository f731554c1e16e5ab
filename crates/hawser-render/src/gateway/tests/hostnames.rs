//! Listener and route hostnames intersect as the spec defines it.

use super::super::hostname::intersect;
use super::*;

fn hosts(listener: Option<&str>, route: &[&str]) -> Vec<Option<String>> {
    let route: Vec<String> = route.iter().map(|h| h.to_string()).collect();
    intersect(listener, &route)
}

fn some(hosts: &[&str]) -> Vec<Option<String>> {
    hosts.iter().map(|h| Some(h.to_string())).collect()
}

#[test]
fn intersections() {
    assert_eq!(hosts(None, &[]), vec![None]);
    assert_eq!(hosts(None, &["a.com"]), some(&["a.com"]));
    assert_eq!(hosts(Some("a.com"), &[]), some(&["a.com"]));
    assert_eq!(hosts(Some("a.com"), &["a.com", "b.com"]), some(&["a.com"]));
    // A wildcard listener takes the route's names under it, at any depth.
    assert_eq!(
        hosts(
            Some("*.example.com"),
            &["a.example.com", "a.b.example.com", "example.com"]
        ),
        some(&["a.b.example.com", "a.example.com"])
    );
    // A wildcard route narrows to an exact listener name under it.
    assert_eq!(
        hosts(Some("a.example.com"), &["*.example.com"]),
        some(&["a.example.com"])
    );
    assert_eq!(
        hosts(Some("example.com"), &["*.example.com"]),
        Vec::<Option<String>>::new()
    );
    // Two wildcards: the narrower one.
    assert_eq!(
        hosts(Some("*.example.com"), &["*.b.example.com"]),
        some(&["*.b.example.com"])
    );
    assert_eq!(
        hosts(Some("*.b.example.com"), &["*.example.com"]),
        some(&["*.b.example.com"])
    );
    assert_eq!(
        hosts(Some("*.a.com"), &["*.b.com"]),
        Vec::<Option<String>>::new()
    );
    // A suffix that is not a whole label does not match.
    assert_eq!(
        hosts(Some("*.example.com"), &["aexample.com"]),
        Vec::<Option<String>>::new()
    );
}

#[test]
fn no_intersection_is_no_matching_listener_hostname() {
    let store = store([
        gateway(vec![with_hostname(
            listener("http", 80, "HTTP"),
            "*.example.com",
        )]),
        Object::HttpRoute(HttpRoute {
            meta: meta("app", "other", &["other.org"]),
            rules: vec![rule(
                vec![HttpRouteMatch::default()],
                vec![backend(None, "web", 1)],
            )],
        }),
        Object::HttpRoute(HttpRoute {
            meta: meta("app", "mine", &["www.example.com", "other.org"]),
            rules: vec![rule(
                vec![HttpRouteMatch::default()],
                vec![backend(None, "web", 1)],
            )],
        }),
    ]);
    let routing = routing(&store);
    let other = parent_conditions(&routing, Kind::HttpRoute, "other", 0);
    assert_eq!(
        state(&other, "Accepted"),
        ("False", "NoMatchingListenerHostname")
    );
    let mine = parent_conditions(&routing, Kind::HttpRoute, "mine", 0);
    assert_eq!(state(&mine, "Accepted"), ("True", "Accepted"));
    let entry = listener_entry(&routing, "http");
    let served: Vec<_> = entry
        .http_rules
        .iter()
        .map(|e| e.hostname.clone())
        .collect();
    assert_eq!(served, some(&["www.example.com"]));
    assert_eq!(listener_status(&routing, "http").attached_routes, 1);
}
