//! A render after a change that names no other backend takes the last
//! render's backends whole, and renders what a new renderer renders.

use std::collections::BTreeMap;

use hawser_model::{
    Endpoint, EndpointPort, EndpointSlice, Ingress, IngressBackend, IngressClass, IngressPath,
    IngressRule, Object, ObjectKey, PathType, Service, ServicePort, ServicePortRef, ServiceType,
    Store,
};

use super::*;

fn service(name: &str, address: &str) -> [Object; 2] {
    let key = ObjectKey::new("app", name);
    let service = Service {
        key: key.clone(),
        annotations: BTreeMap::new(),
        service_type: ServiceType::Endpoints,
        ports: vec![ServicePort {
            name: "http".to_string(),
            port: 80,
            target_port: Some(ServicePortRef::Number(8080)),
            protocol: "TCP".to_string(),
        }],
    };
    let slice = EndpointSlice {
        key: ObjectKey::new("app", format!("{name}-1")),
        service_name: Some(name.to_string()),
        address_type: "IPv4".to_string(),
        ports: vec![EndpointPort {
            name: "http".to_string(),
            port: 8080,
            protocol: "TCP".to_string(),
        }],
        endpoints: vec![Endpoint {
            addresses: vec![address.to_string()],
            ready: true,
            serving: true,
            terminating: false,
            target: None,
        }],
    };
    [Object::Service(service), Object::EndpointSlice(slice)]
}

fn ingress(name: &str, service: &str) -> Object {
    let backend = IngressBackend::Service {
        name: service.to_string(),
        port: ServicePortRef::Name("http".to_string()),
    };
    Object::Ingress(Ingress {
        key: ObjectKey::new("app", name),
        created: None,
        class_name: None,
        annotations: BTreeMap::new(),
        default_backend: None,
        tls: Vec::new(),
        rules: vec![IngressRule {
            host: Some(format!("{name}.test")),
            paths: vec![IngressPath {
                path: Some("/".to_string()),
                path_type: PathType::Prefix,
                backend,
            }],
        }],
    })
}

fn store(objects: impl IntoIterator<Item = Object>) -> Store {
    let mut store = Store::new();
    store.insert(Object::IngressClass(IngressClass {
        name: "hawser".to_string(),
        controller: crate::INGRESS_CONTROLLER.to_string(),
        is_default: true,
    }));
    for object in objects {
        store.insert(object);
    }
    store
}

/// A renderer whose default certificate is `certificate`.
fn renderer(certificate: &CertificatePem) -> Renderer {
    let renderer = Renderer::new(RenderConfig::default()).expect("renderer");
    renderer.with_default_certificate(certificate.clone())
}

/// Renders `store` after `previous` with `renderer`, checks a new renderer
/// renders the same, and hands the render on.
fn render_as_new(renderer: &Renderer, store: &Store, previous: &Plan) -> Rendered {
    let rendered = renderer
        .render_after(store, Some(previous))
        .expect("render");
    let certificate = renderer.default_certificate.clone();
    let fresh = (self::renderer(&certificate))
        .render_after(store, Some(previous))
        .expect("render");
    assert_eq!(rendered.files, fresh.files);
    assert_eq!(rendered.plan, fresh.plan);
    assert_eq!(rendered.diagnostics, fresh.diagnostics);
    rendered
}

#[test]
fn a_change_that_names_no_other_backend_takes_the_last_backends_whole() {
    let certificate = tls::generate_default_certificate().expect("a certificate");
    let renderer = renderer(&certificate);
    let [web, web_slice] = service("web", "10.0.0.1");
    let [api, api_slice] = service("api", "10.0.0.2");
    let before = store([web, web_slice, api, api_slice, ingress("a", "web")]);
    let first = renderer.render(&before).expect("render");
    assert_eq!(renderer.kept_backends.taken_whole(), 0);

    // A route to a Service routed to already.
    let mut more = before.clone();
    more.insert(ingress("b", "web"));
    let second = render_as_new(&renderer, &more, &first.plan);
    assert_eq!(renderer.kept_backends.taken_whole(), 1);

    // A Service named for the first time, then an endpoint moved: each
    // backend made or reused again.
    let mut named = more.clone();
    named.insert(ingress("c", "api"));
    let third = render_as_new(&renderer, &named, &second.plan);
    let [_, moved] = service("web", "10.0.0.9");
    let mut swapped = named.clone();
    swapped.insert(moved);
    let fourth = render_as_new(&renderer, &swapped, &third.plan);
    assert_eq!(renderer.kept_backends.taken_whole(), 1);

    // And after those, whole again.
    let mut again = swapped.clone();
    again.insert(ingress("d", "api"));
    render_as_new(&renderer, &again, &fourth.plan);
    assert_eq!(renderer.kept_backends.taken_whole(), 2);
}
