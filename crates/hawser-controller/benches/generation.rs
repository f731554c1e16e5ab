//! What one generation costs the controller in split mode before any agent
//! is contacted: the render cycle's render, and the render each agent
//! receives (its settings: its own sockets and ports), encoded for the wire.
//!
//! `separate`: the cycle renders under the controller's configuration and
//! the fleet renders again for the agents' settings (how every generation
//! was made before the cycle rendered for the agents). `shared`: the cycle
//! renders for the settings most agents ask for and the agents asking for
//! them take that render as it is. Three agents with the same settings, as
//! in a cluster; each iteration is a new generation, so nothing is cached
//! across iterations.
//!
//! `wire`: the build alone, of one render the cycle made (digests, blobs,
//! the plan encoded): what each generation adds to the render in a cluster.
//! `wire_one_change`: the same, for two renders one endpoint apart, built
//! in turn (the second rendered after the first, so that it shares the
//! backends that did not change, as the render cycle's renders do).
//!
//! ```text
//! cargo bench -p hawser-controller --bench generation
//! ```

#![allow(
    clippy::expect_used,
    reason = "a benchmark fails loudly on a broken setup"
)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hawser_controller::fleet::{Renders, Snapshot};
use hawser_model::Store;
use hawser_render::{RenderConfig, Renderer, generate_default_certificate};

#[path = "../../hawser-render/benches/fixture.rs"]
mod fixture;

const INGRESSES: usize = 3_000;
const AGENTS: [&str; 3] = ["10.0.0.1:7443", "10.0.0.2:7443", "10.0.0.3:7443"];

fn agent_settings() -> BTreeMap<String, String> {
    [
        ("runtimeSocket", "/var/run/hawser/state/run/admin.sock"),
        ("serverStateFile", "/var/run/hawser/state/run/server-state"),
        ("healthPort", "8404"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// One generation: the cycle's render, then each agent's build.
fn generation(
    renders: &Renders,
    cycle: &Renderer,
    base: &Arc<RenderConfig>,
    store: &Arc<Store>,
    generation: u64,
    shared: bool,
) {
    let rendered = cycle.render(store).expect("render");
    let snapshot = Snapshot {
        generation,
        store: Arc::clone(store),
        config: Arc::clone(base),
        rendered: shared.then(|| Arc::new(rendered)),
        served: Arc::default(),
        rejected: Arc::default(),
    };
    for _ in AGENTS {
        black_box(renders.build(&snapshot, &agent_settings()).expect("build"));
    }
}

fn bench(c: &mut Criterion) {
    let certificate = generate_default_certificate().expect("certificate");
    let config = RenderConfig::default();
    let base = Renderer::new(config.clone())
        .expect("renderer")
        .with_default_certificate(certificate.clone());
    let renders = Renders::new(config, certificate).expect("renders");
    for agent in AGENTS {
        renders.asked_by(agent, &agent_settings());
    }
    let for_agents = renders.cycle_renderer(&base).expect("agents' renderer");
    let store = Arc::new(fixture::store(INGRESSES));
    let mut group = c.benchmark_group("generation");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(INGRESSES as u64));
    let mut next = 0;
    for (name, cycle, shared) in [
        ("separate", &base, false),
        ("shared", for_agents.as_ref(), true),
    ] {
        group.bench_function(BenchmarkId::new(name, INGRESSES), |b| {
            b.iter(|| {
                next += 1;
                generation(&renders, cycle, base.config(), &store, next, shared);
            });
        });
    }
    let rendered = Arc::new(for_agents.render(&store).expect("render"));
    let swapped = fixture::with_an_endpoint_swapped(&store, INGRESSES / 2);
    let after_swap = Arc::new(
        for_agents
            .render_after(&swapped, Some(&rendered.plan))
            .expect("render the swap"),
    );
    // `wire`: one render built again and again; `wire_one_change`: two
    // renders one endpoint apart, built in turn.
    for (name, renders_built) in [
        ("wire", [Arc::clone(&rendered), Arc::clone(&rendered)]),
        ("wire_one_change", [Arc::clone(&rendered), after_swap]),
    ] {
        group.bench_function(BenchmarkId::new(name, INGRESSES), |b| {
            b.iter(|| {
                next += 1;
                let snapshot = Snapshot {
                    generation: next,
                    store: Arc::clone(&store),
                    config: Arc::clone(base.config()),
                    rendered: Some(Arc::clone(&renders_built[(next % 2) as usize])),
                    served: Arc::default(),
                    rejected: Arc::default(),
                };
                black_box(renders.build(&snapshot, &agent_settings()).expect("build"));
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
