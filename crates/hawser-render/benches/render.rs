//! How long one full render takes as the number of Ingresses grows.
//!
//! Each Ingress has one host and two paths (Prefix `/`, Exact `/healthz`) to
//! its own Service, whose EndpointSlice holds three ready endpoints. The store
//! is built once, outside the timed loop; the timed part is
//! `Renderer::render` (routing table, backends, TLS, templates, maps).
//!
//! ```text
//! cargo bench -p hawser-render --bench render
//! cargo bench -p hawser-render --bench render -- render/10000   # one size
//! ```

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hawser_model::{
    Endpoint, EndpointPort, EndpointSlice, Ingress, IngressBackend, IngressClass, IngressPath,
    IngressRule, Object, ObjectKey, PathType, Service, ServicePort, ServicePortRef, ServiceType,
    Store,
};
use hawser_render::{INGRESS_CONTROLLER, RenderConfig, Renderer};

const SIZES: [usize; 2] = [1_000, 10_000];
/// Ingresses spread over this many namespaces, as in a shared cluster.
const NAMESPACES: usize = 50;

fn store(ingresses: usize) -> Store {
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

fn render(c: &mut Criterion) {
    let renderer =
        Renderer::new(RenderConfig::default()).unwrap_or_else(|e| panic!("default config: {e}"));
    let mut group = c.benchmark_group("render");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for size in SIZES {
        let store = store(size);
        // Check once that the store renders as intended before timing it.
        let rendered = renderer
            .render(&store)
            .unwrap_or_else(|e| panic!("render: {e}"));
        assert!(
            rendered.diagnostics.is_empty(),
            "{:?}",
            rendered.diagnostics
        );
        assert_eq!(rendered.plan.backends.len(), size);
        assert!(rendered.plan.backends.iter().all(|b| b.servers.len() == 3));
        group.throughput(Throughput::Elements(size as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &store, |b, store| {
            b.iter(|| renderer.render(black_box(store)));
        });
    }
    group.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
