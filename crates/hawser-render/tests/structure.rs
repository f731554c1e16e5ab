//! The structure digest: equal when versions differ only in their servers,
//! different when anything else in haproxy.cfg changes.

#![allow(clippy::expect_used, reason = "tests fail loudly on unexpected errors")]

mod support;

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
fn gateway_route_changes_change_the_structure_and_endpoint_changes_do_not() {
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
