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

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hawser_render::{RenderConfig, Renderer};

mod fixture;
use fixture::store;

const SIZES: [usize; 2] = [1_000, 10_000];

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
        let own: Vec<_> = rendered
            .plan
            .backends
            .iter()
            .filter(|b| !b.role.is_spare())
            .collect();
        assert_eq!(own.len(), size);
        assert!(own.iter().all(|b| b.servers.len() == 3));
        group.throughput(Throughput::Elements(size as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &store, |b, store| {
            b.iter(|| renderer.render(black_box(store)));
        });
    }
    group.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
