//! The structure digest: equal when versions differ only in their servers,
//! different when anything else in haproxy.cfg changes.

use crate::support;

use hawser_model::{EndpointSlice, Object, Store};
use hawser_render::RenderConfig;

/// `store` with `change` made to every EndpointSlice of its Services.
fn with_slices(store: &Store, change: impl Fn(&mut EndpointSlice)) -> Store {
    let mut store = store.clone();
    let slices: Vec<_> = store
        .services()
        .flat_map(|s| {
            store
                .endpoint_slices_for(&s.key)
                .cloned()
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!slices.is_empty());
    for mut slice in slices {
        change(&mut slice);
        store.insert(Object::EndpointSlice(slice));
    }
    store
}

fn digest(store: &Store, config: RenderConfig) -> String {
    support::renderer(config)
        .render(store)
        .expect("render")
        .plan
        .structure_digest
        .clone()
}

#[test]
fn endpoint_changes_keep_the_structure() {
    let case = support::render_case("endpoints");
    let before = digest(&case.store, RenderConfig::default());
    let store = with_slices(&case.store, |slice| slice.endpoints.retain(|e| !e.ready));
    let after = support::renderer(RenderConfig::default())
        .render(&store)
        .expect("render");
    assert_ne!(
        after.files.text("haproxy.cfg"),
        case.rendered.files.text("haproxy.cfg")
    );
    assert_eq!(after.plan.structure_digest, before);
}

#[test]
fn settings_and_backend_changes_change_the_structure() {
    let case = support::render_case("basic");
    let before = digest(&case.store, RenderConfig::default());
    let mut config = RenderConfig::default();
    config.settings.timeouts.server = "2m".to_string();
    assert_ne!(digest(&case.store, config), before);

    let mut store = case.store.clone();
    let ingresses: Vec<_> = store.ingresses().cloned().collect();
    for ingress in ingresses {
        let mut ingress = ingress;
        ingress.rules.clear();
        ingress.default_backend = None;
        store.insert(Object::Ingress(ingress));
    }
    assert_ne!(digest(&store, RenderConfig::default()), before);
}

#[test]
fn gateway_rule_changes_change_the_structure_and_endpoint_changes_do_not() {
    let case = support::render_case("gateway");
    let before = digest(&case.store, RenderConfig::default());

    let endpoints = with_slices(&case.store, |slice| slice.endpoints.clear());
    assert_eq!(digest(&endpoints, RenderConfig::default()), before);

    let mut routes = case.store.clone();
    let http_routes: Vec<_> = routes.http_routes().cloned().collect();
    assert!(!http_routes.is_empty());
    for mut route in http_routes {
        route.rules.truncate(1);
        routes.insert(Object::HttpRoute(route));
    }
    assert_ne!(digest(&routes, RenderConfig::default()), before);
}

/// Maps first: HTTPRoute rules that only route a host and path to one
/// backend live in the gateway map, so adding, moving or removing one
/// changes the map, not haproxy.cfg.
#[test]
fn simple_gateway_routes_change_only_the_gateway_map() {
    let case = support::render_case("gateway");
    let rendered = |store: &Store| {
        hawser_render::Renderer::new(RenderConfig::default())
            .expect("renderer")
            .render(store)
            .expect("render")
    };
    let before = rendered(&case.store);
    let map = |r: &hawser_render::Rendered| {
        r.plan
            .maps
            .iter()
            .find(|m| m.path == "maps/gateway.map")
            .expect("the gateway map")
            .entries
            .clone()
    };
    let mut added = case.store.clone();
    let mut route = added
        .http_routes()
        .find(|r| r.meta.key.name == "secure")
        .expect("route secure")
        .clone();
    route.meta.key.name = "secure-copy".to_string();
    route.meta.hostnames = vec!["copy.example.com".to_string()];
    if let Some(m) = route.rules[0].matches.first_mut() {
        m.path.value = "/copy".to_string();
    }
    added.insert(Object::HttpRoute(route));
    let after = rendered(&added);
    assert_eq!(after.plan.structure_digest, before.plan.structure_digest);
    assert_ne!(map(&after), map(&before));
    assert!(
        map(&after)
            .iter()
            .any(|e| e.key.contains("copy.example.com/copy")),
        "{:?}",
        map(&after)
    );
}
