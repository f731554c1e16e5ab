//! What the store costs a render and the admission webhook: a render-like
//! walk (every Ingress, its Service, that Service's EndpointSlices), and the
//! webhook's clone of a snapshot with one candidate Ingress inserted.
//!
//! ```text
//! cargo bench -p hawser-model --bench store
//! ```

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hawser_model::{
    Endpoint, EndpointSlice, Ingress, IngressBackend, IngressPath, IngressRule, Object, ObjectKey,
    PathType, Service, ServicePort, ServicePortRef, ServiceType, Store,
};

const SIZES: [usize; 2] = [1_000, 10_000];

fn ingress(namespace: &str, name: &str) -> Ingress {
    Ingress {
        key: ObjectKey::new(namespace, name),
        created: None,
        class_name: None,
        annotations: BTreeMap::new(),
        default_backend: None,
        tls: Vec::new(),
        rules: vec![IngressRule {
            host: Some(format!("{name}.{namespace}.example.com")),
            paths: vec![IngressPath {
                path: Some("/".to_string()),
                path_type: PathType::Prefix,
                backend: IngressBackend::Service {
                    name: name.to_string(),
                    port: ServicePortRef::Number(80),
                },
            }],
        }],
    }
}

/// `size` Ingresses over 50 namespaces, each with its Service and one
/// EndpointSlice of three endpoints.
fn store(size: usize) -> Store {
    let mut store = Store::new();
    for i in 0..size {
        let namespace = format!("team-{}", i % 50);
        let name = format!("app-{i}");
        store.insert(Object::Service(Service {
            key: ObjectKey::new(&namespace, &name),
            annotations: BTreeMap::new(),
            service_type: ServiceType::Endpoints,
            ports: vec![ServicePort {
                name: "http".to_string(),
                port: 80,
                target_port: None,
                protocol: "TCP".to_string(),
            }],
        }));
        store.insert(Object::EndpointSlice(EndpointSlice {
            key: ObjectKey::new(&namespace, format!("{name}-abcde")),
            service_name: Some(name.clone()),
            address_type: "IPv4".to_string(),
            ports: Vec::new(),
            endpoints: (1..=3)
                .map(|e| Endpoint {
                    addresses: vec![format!("10.0.{}.{e}", i % 256)],
                    ready: true,
                    serving: true,
                    terminating: false,
                    target: None,
                })
                .collect(),
        }));
        store.insert(Object::Ingress(ingress(&namespace, &name)));
    }
    store
}

/// What a render reads of the store for each Ingress.
fn walk(store: &Store) -> usize {
    let mut endpoints = 0;
    for ingress in store.ingresses() {
        let key = ObjectKey::new(&ingress.key.namespace, &ingress.key.name);
        if store.service(&key).is_some() {
            endpoints += store
                .endpoint_slices_for(&key)
                .map(|s| s.endpoints.len())
                .sum::<usize>();
        }
    }
    endpoints
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("store");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for size in SIZES {
        let store = store(size);
        assert_eq!(walk(&store), 3 * size);
        group.bench_with_input(BenchmarkId::new("walk", size), &store, |b, store| {
            b.iter(|| walk(black_box(store)));
        });
        group.bench_with_input(
            BenchmarkId::new("clone_with_candidate", size),
            &store,
            |b, store| {
                b.iter(|| {
                    let mut with = black_box(store).clone();
                    with.insert(Object::Ingress(ingress("web", "candidate")));
                    with
                });
            },
        );
    }
    group.finish();
}

criterion_group!(store_benches, benches);
criterion_main!(store_benches);
