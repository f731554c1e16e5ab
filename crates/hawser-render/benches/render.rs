//! How long one full render takes as the number of Ingresses grows.
//!
//! Each Ingress has one host and two paths (Prefix `/`, Exact `/healthz`) to
//! its own Service, whose EndpointSlice holds three ready endpoints. The store
//! is built once, outside the timed loop; the timed part is
//! `Renderer::render` (routing table, backends, TLS, templates, maps) of
//! that store and, in turn, of it with one endpoint moved, so that no
//! render finds the last one's haproxy.cfg reusable.
//!
//! Those renders follow one of a store that differs from theirs in one
//! endpoint, so a renderer reuses what it kept of the objects that did not
//! change (see `Renderer::render_after`). `render_first/10000` times the first
//! render of a new renderer, which has nothing kept: a controller's first
//! render after it starts.
//!
//! `render_one_change` renders a store of 3,000 such Ingresses once, then
//! times the render that follows it (`Renderer::render_after` with the last
//! plan) of the store with one Ingress changed: a path added to it. The
//! timed loop alternates between the two stores, so every render follows a
//! render of the other one, as in a controller that sees one change at a time.
//!
//! ```text
//! cargo bench -p hawser-render --bench render
//! cargo bench -p hawser-render --bench render -- render/10000   # one size
//! cargo bench -p hawser-render --bench render -- render_first     # nothing kept
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hawser_model::{
    IngressBackend, IngressPath, Object, ObjectKey, PathType, ServicePortRef, Store,
};
use hawser_plan::Plan;
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
        // Every render differs from the last in one endpoint: a renderer
        // that rendered the same store just before would reuse its
        // haproxy.cfg, which is no cold render.
        let stores = [with_an_endpoint_moved(&store), store];
        let mut turn = 0;
        group.bench_function(BenchmarkId::from_parameter(size), |b| {
            b.iter(|| {
                turn = 1 - turn;
                renderer.render(black_box(&stores[turn]))
            });
        });
    }
    group.finish();
}

/// The Ingresses of the first-render benchmark.
const FIRST_SIZE: usize = 10_000;

fn render_first(c: &mut Criterion) {
    let new_renderer =
        || Renderer::new(RenderConfig::default()).unwrap_or_else(|e| panic!("default config: {e}"));
    let store = store(FIRST_SIZE);
    let mut group = c.benchmark_group("render_first");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(FIRST_SIZE as u64));
    group.bench_function(BenchmarkId::from_parameter(FIRST_SIZE), |b| {
        // A new renderer per render, made and dropped outside the timed part.
        b.iter_batched_ref(
            new_renderer,
            |renderer| renderer.render(black_box(&store)),
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// The Ingresses of the one-change benchmark.
const ONE_CHANGE_SIZE: usize = 3_000;

fn render_one_change(c: &mut Criterion) {
    let renderer =
        Renderer::new(RenderConfig::default()).unwrap_or_else(|e| panic!("default config: {e}"));
    let before = store(ONE_CHANGE_SIZE);
    let after = with_a_path_added(&before, ONE_CHANGE_SIZE / 2);
    let stores = [before, after];
    let render_after = |store: &Store, previous: Option<&Plan>| {
        renderer
            .render_after(store, previous)
            .unwrap_or_else(|e| panic!("render: {e}"))
    };
    let first = render_after(&stores[0], None);
    let second = render_after(&stores[1], Some(&first.plan));
    assert!(second.diagnostics.is_empty(), "{:?}", second.diagnostics);
    assert_ne!(
        first.files.get(hawser_render::ROUTES_MAP_PATH),
        second.files.get(hawser_render::ROUTES_MAP_PATH),
        "the change must change the routes"
    );
    let mut group = c.benchmark_group("render_one_change");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function(BenchmarkId::from_parameter(ONE_CHANGE_SIZE), |b| {
        let mut previous = second.plan.clone();
        let mut turn = 0;
        b.iter(|| {
            let rendered = render_after(black_box(&stores[turn]), Some(&previous));
            previous = rendered.plan;
            turn = 1 - turn;
        });
    });
    group.finish();
}

/// `store` with the first endpoint of Service `app-0` on another address.
fn with_an_endpoint_moved(store: &Store) -> Store {
    let mut changed = store.clone();
    let service = ObjectKey::new("team-0", "app-0");
    let mut slice = store
        .endpoint_slices_for(&service)
        .next()
        .unwrap_or_else(|| panic!("no EndpointSlice for {service}"))
        .clone();
    slice.endpoints[0].addresses = vec!["10.255.255.1".to_string()];
    changed.insert(Object::EndpointSlice(slice));
    changed
}

/// `store` with a third path, Prefix `/api`, added to Ingress `app-<i>`.
fn with_a_path_added(store: &Store, i: usize) -> Store {
    let mut changed = store.clone();
    let name = format!("app-{i}");
    let mut ingress = store
        .ingresses()
        .find(|ingress| ingress.key.name == name)
        .unwrap_or_else(|| panic!("no Ingress {name}"))
        .clone();
    ingress.rules[0].paths.push(IngressPath {
        path: Some("/api".to_string()),
        path_type: PathType::Prefix,
        backend: IngressBackend::Service {
            name,
            port: ServicePortRef::Name("http".to_string()),
        },
    });
    changed.insert(Object::Ingress(ingress));
    changed
}

criterion_group!(benches, render, render_first, render_one_change);
criterion_main!(benches);
