//! A render is a function of the store and the configuration: the same inputs
//! give the same bytes, whichever renderer renders them and in whichever order
//! the objects reached the store.
//!
//! Every input case under `tests/inputs/` is checked.

use crate::support;

use hawser_model::{EndpointSlice, Ingress, Object, ObjectKey, Store};
use hawser_render::{FileKind, Rendered, Renderer};

use support::{Case, render_case, renderer};

fn case_names() -> Vec<String> {
    let names = support::case_names();
    assert!(names.len() >= 10, "{names:?}");
    names
}

fn assert_same(a: &Rendered, b: &Rendered, what: &str) {
    assert_eq!(a.files, b.files, "{what}: files differ");
    assert_eq!(a.plan, b.plan, "{what}: plans differ");
    assert_eq!(a.diagnostics, b.diagnostics, "{what}: diagnostics differ");
}

#[test]
fn one_renderer_renders_the_same_store_identically() {
    for name in case_names() {
        let case = render_case(&name);
        let renderer = renderer(case.config.clone());
        let first = renderer.render(&case.store).expect("render");
        let second = renderer.render(&case.store).expect("render");
        assert_same(&first, &second, &name);
        assert_same(&first, &case.rendered, &name);
    }
}

#[test]
fn two_renderers_with_the_same_default_certificate_agree() {
    for name in case_names() {
        let case = render_case(&name);
        let a = renderer(case.config.clone())
            .render(&case.store)
            .expect("a");
        let b = renderer(case.config.clone())
            .render(&case.store)
            .expect("b");
        assert_same(&a, &b, &name);
    }
}

#[test]
fn generated_default_certificates_change_only_the_default_certificate() {
    let case = render_case("tls");
    let a = Renderer::new(case.config.clone()).expect("a");
    let b = Renderer::new(case.config.clone()).expect("b");
    let (a, b) = (
        a.render(&case.store).expect("a"),
        b.render(&case.store).expect("b"),
    );
    assert_eq!(a.plan, b.plan);
    assert_eq!(a.diagnostics, b.diagnostics);
    for (path, file) in a.files.iter() {
        let other = b.files.get(path).expect("same paths");
        if path == hawser_render::DEFAULT_CERT_PATH {
            assert_ne!(file, other, "each renderer generates its own certificate");
        } else {
            assert_eq!(file, other, "{path}");
        }
    }
    assert_eq!(a.files.len(), b.files.len());
    // And a stable render of a Renderer is stable across renders.
    let again = Renderer::new(case.config).expect("c");
    assert_eq!(
        again.render(&case.store).expect("1").files,
        again.render(&case.store).expect("2").files
    );
}

#[test]
fn insertion_order_does_not_matter() {
    for name in case_names() {
        let case = render_case(&name);
        let objects = objects(&case);
        let renderer = renderer(case.config.clone());
        let orders: [(&str, Vec<Object>); 3] = [
            ("as loaded", objects.clone()),
            ("reversed", objects.iter().rev().cloned().collect()),
            ("interleaved", interleave(&objects)),
        ];
        for (order, objects) in orders {
            let store = store_of(objects);
            let rendered = renderer.render(&store).expect("render");
            assert_same(&rendered, &case.rendered, &format!("{name}, {order}"));
        }
    }
}

#[test]
fn reordered_endpoints_and_ports_rename_nothing() {
    for name in case_names() {
        let case = render_case(&name);
        let objects = objects(&case)
            .into_iter()
            .map(|object| match object {
                Object::EndpointSlice(slice) => Object::EndpointSlice(reversed(slice)),
                other => other,
            })
            .collect();
        let rendered = renderer(case.config.clone())
            .render(&store_of(objects))
            .expect("render");
        assert_same(&rendered, &case.rendered, &name);
    }
}

#[test]
fn replacing_an_object_with_itself_changes_nothing() {
    for name in case_names() {
        let case = render_case(&name);
        let mut store = case.store.clone();
        for object in objects(&case) {
            assert!(store.insert(object).is_some(), "{name}: replaced");
        }
        let rendered = renderer(case.config.clone())
            .render(&store)
            .expect("render");
        assert_same(&rendered, &case.rendered, &name);
        let config = rendered.files.get(hawser_render::CONFIG_PATH).expect("cfg");
        assert_eq!(config.kind, FileKind::Config);
    }
}

/// Every object of the case's store that can affect a render: Ingresses,
/// IngressClasses, Gateway API classes, Gateways, their routes, Services
/// with their EndpointSlices, and the Secrets that Ingresses, Gateway
/// listeners or the config name.
fn objects(case: &Case) -> Vec<Object> {
    let store = &case.store;
    let mut objects: Vec<Object> = Vec::new();
    objects.extend(store.ingress_classes().cloned().map(Object::IngressClass));
    for service in store.services() {
        objects.push(Object::Service(service.clone()));
        objects.extend(
            store
                .endpoint_slices_for(&service.key)
                .cloned()
                .map(Object::EndpointSlice),
        );
    }
    let mut secrets: Vec<ObjectKey> = store.ingresses().flat_map(tls_secrets).collect();
    for gateway in store.gateways() {
        let refs = gateway
            .listeners
            .iter()
            .filter_map(|l| l.tls.as_ref())
            .flat_map(|tls| &tls.certificate_refs);
        for r in refs {
            let namespace = r.namespace.as_deref().unwrap_or(&gateway.key.namespace);
            secrets.push(ObjectKey::new(namespace, &r.name));
        }
    }
    if let Some((ns, name)) = case
        .config
        .settings
        .default_certificate
        .as_deref()
        .and_then(|s| s.split_once('/'))
    {
        secrets.push(ObjectKey::new(ns, name));
    }
    secrets.sort();
    secrets.dedup();
    objects.extend(
        secrets
            .iter()
            .filter_map(|key| store.secret(key))
            .cloned()
            .map(Object::Secret),
    );
    objects.extend(store.ingresses().cloned().map(Object::Ingress));
    objects.extend(store.gateway_classes().cloned().map(Object::GatewayClass));
    objects.extend(store.gateways().cloned().map(Object::Gateway));
    objects.extend(store.http_routes().cloned().map(Object::HttpRoute));
    objects.extend(store.grpc_routes().cloned().map(Object::GrpcRoute));
    objects.extend(store.tls_routes().cloned().map(Object::TlsRoute));
    objects.extend(store.tcp_routes().cloned().map(Object::TcpRoute));
    objects
}

fn tls_secrets(ingress: &Ingress) -> impl Iterator<Item = ObjectKey> + '_ {
    ingress
        .tls
        .iter()
        .filter_map(|t| t.secret_name.as_ref())
        .map(|name| ObjectKey::new(&ingress.key.namespace, name))
}

fn store_of(objects: Vec<Object>) -> Store {
    let mut store = Store::new();
    for object in objects {
        assert!(store.insert(object).is_none(), "each object once");
    }
    store
}

/// Odd positions first, then even ones, each reversed: a third order unlike
/// the other two.
fn interleave(objects: &[Object]) -> Vec<Object> {
    let odd = objects.iter().skip(1).step_by(2).rev();
    let even = objects.iter().step_by(2).rev();
    odd.chain(even).cloned().collect()
}

fn reversed(mut slice: EndpointSlice) -> EndpointSlice {
    slice.ports.reverse();
    slice.endpoints.reverse();
    for endpoint in &mut slice.endpoints {
        endpoint.addresses.reverse();
    }
    slice
}
