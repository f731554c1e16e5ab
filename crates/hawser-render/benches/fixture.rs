//! The store the benchmarks render: N Ingresses, each with one host and
//! two paths (Prefix `/`, Exact `/healthz`) to its own Service, whose
//! EndpointSlice holds three ready endpoints. Shared by the render
//! benchmark and the controller's generation benchmark.

use hawser_model::{
    Endpoint, EndpointPort, EndpointSlice, Ingress, IngressBackend, IngressClass, IngressPath,
    IngressRule, Object, ObjectKey, PathType, Service, ServicePort, ServicePortRef, ServiceType,
    Store,
};
use hawser_render::INGRESS_CONTROLLER;
use std::collections::BTreeMap;

/// Ingresses spread over this many namespaces, as in a shared cluster.
const NAMESPACES: usize = 50;

/// `ingresses` Ingresses as described above.
pub fn store(ingresses: usize) -> Store {
    let mut store = Store::new();
    store.insert(Object::IngressClass(IngressClass {
        name: "hawser".to_string(),
        controller: INGRESS_CONTROLLER.to_string(),
        is_default: true,
    }));
    for i in 0..ingresses {
        let namespace = format!("team-{}", i % NAMESPACES);
        let name = format!("app-{i}");
        let key = ObjectKey::new(&namespace, &name);
        store.insert(Object::Service(Service {
            key: key.clone(),
            annotations: BTreeMap::new(),
            service_type: ServiceType::Endpoints,
            ports: vec![ServicePort {
                name: "http".to_string(),
                port: 80,
                target_port: Some(ServicePortRef::Number(8080)),
                protocol: "TCP".to_string(),
            }],
        }));
        store.insert(Object::EndpointSlice(EndpointSlice {
            key: ObjectKey::new(&namespace, format!("{name}-abcde")),
            service_name: Some(name.clone()),
            address_type: "IPv4".to_string(),
            ports: vec![EndpointPort {
                name: "http".to_string(),
                port: 8080,
                protocol: "TCP".to_string(),
            }],
            endpoints: (1..=3)
                .map(|e| Endpoint {
                    addresses: vec![format!("10.{}.{}.{e}", i / 256 % 256, i % 256)],
                    ready: true,
                    serving: true,
                    terminating: false,
                    target: Some(format!("{name}-pod-{e}")),
                })
                .collect(),
        }));
        let backend = || IngressBackend::Service {
            name: name.clone(),
            port: ServicePortRef::Name("http".to_string()),
        };
        store.insert(Object::Ingress(Ingress {
            key,
            created: Some("2024-01-01T00:00:00Z".to_string()),
            class_name: None,
            annotations: BTreeMap::new(),
            default_backend: None,
            tls: Vec::new(),
            rules: vec![IngressRule {
                host: Some(format!("{name}.{namespace}.example.com")),
                paths: vec![
                    IngressPath {
                        path: Some("/".to_string()),
                        path_type: PathType::Prefix,
                        backend: backend(),
                    },
                    IngressPath {
                        path: Some("/healthz".to_string()),
                        path_type: PathType::Exact,
                        backend: backend(),
                    },
                ],
            }],
        }));
    }
    store
}

/// `store` with the first endpoint of the `index`th Ingress's Service
/// replaced: an endpoint swap, for the benchmarks of what follows a render.
#[allow(
    dead_code,
    clippy::expect_used,
    reason = "the render benchmark does not swap endpoints; a benchmark fails loudly on a broken setup"
)]
pub fn with_an_endpoint_swapped(store: &Store, index: usize) -> Store {
    let mut next = store.clone();
    let service = &store.ingresses().nth(index).expect("an Ingress").key;
    let mut slice = store
        .endpoint_slices_for(service)
        .next()
        .expect("its EndpointSlice")
        .clone();
    slice.endpoints[0].addresses = vec!["10.255.255.1".to_string()];
    slice.endpoints[0].target = Some("swapped".to_string());
    next.insert(Object::EndpointSlice(slice));
    next
}
