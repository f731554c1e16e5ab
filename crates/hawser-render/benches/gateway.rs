//! How long one full render of Gateway API routes takes, and what maps
//! first saves: N HTTPRoutes, each a host and a path prefix to its own
//! Service (three endpoints), rendered once as simple rules (the gateway
//! map) and once with a header match added to each (ACL rules written into
//! haproxy.cfg). The store is loaded from generated manifests once, outside
//! the timed loop.
//!
//! ```text
//! cargo bench -p hawser-render --bench gateway
//! cargo bench -p hawser-render --bench gateway -- gateway/map/1000   # one case
//! ```

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hawser_model::Store;
use hawser_render::{CONFIG_PATH, RenderConfig, Renderer};

const SIZES: [usize; 2] = [1_000, 5_000];
/// Routes spread over this many namespaces, as in a shared cluster.
const NAMESPACES: usize = 50;

const GATEWAY: &str = "\
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: hawser }
spec: { controllerName: hawser.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: edge, namespace: infra }
spec:
  gatewayClassName: hawser
  listeners:
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }
";

/// `routes` HTTPRoutes with their Services; `header` adds a header match.
fn manifests(routes: usize, header: bool) -> String {
    let mut out = GATEWAY.to_string();
    for i in 0..routes {
        let (ns, name) = (format!("team-{}", i % NAMESPACES), format!("app-{i}"));
        let header = if header {
            ", headers: [{ name: x-team, value: blue }]"
        } else {
            ""
        };
        let endpoints: String = (1..=3)
            .map(|e| {
                format!(
                    "  - addresses: [\"10.{}.{}.{e}\"]\n",
                    i / 256 % 256,
                    i % 256
                )
            })
            .collect();
        let _ = write!(
            out,
            "---\napiVersion: v1\nkind: Service\nmetadata: {{ name: {name}, namespace: {ns} }}\n\
             spec: {{ ports: [{{ name: http, port: 80 }}] }}\n\
             ---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
             metadata: {{ name: {name}-1, namespace: {ns}, labels: {{ kubernetes.io/service-name: {name} }} }}\n\
             addressType: IPv4\nports: [{{ name: http, port: 8080 }}]\nendpoints:\n{endpoints}\
             ---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n\
             metadata: {{ name: {name}, namespace: {ns} }}\n\
             spec:\n  parentRefs: [{{ name: edge, namespace: infra }}]\n  hostnames: [\"{name}.{ns}.example.com\"]\n  \
             rules:\n    - matches: [{{ path: {{ type: PathPrefix, value: /api }}{header} }}]\n      \
             backendRefs: [{{ name: {name}, port: 80 }}]\n"
        );
    }
    out
}

fn store(routes: usize, header: bool) -> Store {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    std::fs::write(dir.path().join("all.yaml"), manifests(routes, header))
        .unwrap_or_else(|e| panic!("write manifests: {e}"));
    let set = hawser_k8s::load_dir(dir.path()).unwrap_or_else(|e| panic!("load manifests: {e}"));
    assert!(set.problems.is_empty(), "{:?}", set.problems);
    set.store
}

fn render(c: &mut Criterion) {
    let renderer =
        Renderer::new(RenderConfig::default()).unwrap_or_else(|e| panic!("default config: {e}"));
    let mut group = c.benchmark_group("gateway");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for size in SIZES {
        for (case, header) in [("map", false), ("acl", true)] {
            let store = store(size, header);
            // Check once that the store renders as intended before timing it.
            let rendered = renderer
                .render(&store)
                .unwrap_or_else(|e| panic!("render: {e}"));
            assert!(
                rendered.diagnostics.is_empty(),
                "{:?}",
                rendered.diagnostics
            );
            let own = rendered.plan.backends.iter().filter(|b| !b.role.is_spare());
            assert_eq!(own.count(), size);
            let map = rendered
                .plan
                .maps
                .iter()
                .find(|m| m.path == "maps/gateway.map")
                .map_or(0, |m| m.entries.len());
            let config = rendered.files.text(CONFIG_PATH).map_or(0, str::len);
            assert_eq!(map, if header { 0 } else { 2 * size });
            println!(
                "gateway/{case}/{size}: haproxy.cfg {config} bytes, gateway map {map} entries"
            );
            group.throughput(Throughput::Elements(size as u64));
            group.bench_with_input(BenchmarkId::new(case, size), &store, |b, store| {
                b.iter(|| renderer.render(black_box(store)));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
