//! What an Apply costs the agent before it can apply the version: the
//! request's blobs checked against their digests, the version's files put
//! together from them and from what it holds, and the plan read (with its
//! maps' entries, which travel in the map files). Timed for the two
//! changes a cluster makes most, among 3,000 Ingresses, each pushed as a
//! controller pushes it (only the blobs the agent lacks):
//!
//! - `new_route`: an Ingress added; the route map changes, the plan does not;
//! - `endpoint_swap`: a Service's endpoint replaced; haproxy.cfg and the
//!   plan change, the maps do not.
//!
//! ```text
//! cargo bench -p hawser-agent --bench resolve
//! ```

#![allow(
    clippy::expect_used,
    reason = "a benchmark fails loudly on a broken setup"
)]

use std::borrow::Borrow;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hawser_agent::control::Held;
use hawser_model::{Object, ObjectKey, Store};
use hawser_plan::{PLAN_FORMAT, digest, encode};
use hawser_proto::v1;
use hawser_render::{RenderConfig, Rendered, Renderer};

#[path = "../../hawser-render/benches/fixture.rs"]
mod fixture;

const INGRESSES: usize = 3_000;

/// The Apply a controller sends for `next` to an agent holding `held`.
fn request(held: &Held, next: &Rendered) -> v1::ApplyRequest {
    let plan = encode(&next.plan).expect("encode the plan");
    let plan_digest = digest(&plan);
    let mut blobs = Vec::new();
    let mut files = Vec::new();
    for (path, file) in next.files.iter() {
        let digest = digest(&file.content);
        if held.files.get(path) != Some(&digest) {
            blobs.push(v1::Blob {
                digest: digest.clone(),
                content: file.content.clone(),
            });
        }
        files.push(v1::FileEntry {
            path: path.to_string(),
            digest,
            kind: file.kind.name().to_string(),
        });
    }
    if plan_digest != held.plan_digest {
        blobs.push(v1::Blob {
            digest: plan_digest.clone(),
            content: plan,
        });
    }
    v1::ApplyRequest {
        epoch: 1,
        expected_generation: held.generation,
        generation: held.generation + 1,
        files,
        plan_digest,
        plan_format: PLAN_FORMAT,
        edits: Vec::new(),
        blobs,
        controller: "bench".to_string(),
    }
}

/// `store` with one more Ingress, to the first Service.
fn with_a_route_added(store: &Store) -> Store {
    let mut next = store.clone();
    let mut ingress = store.ingresses().next().expect("an Ingress").clone();
    ingress.key = ObjectKey::new(&ingress.key.namespace, "added");
    for rule in &mut ingress.rules {
        rule.host = Some("added.example.com".to_string());
    }
    next.insert(Object::Ingress(ingress));
    next
}

fn resolve(c: &mut Criterion) {
    let renderer = Renderer::new(RenderConfig::default()).expect("the default configuration");
    let store = fixture::store(INGRESSES);
    let first = renderer.render(&store).expect("render");
    // What the agent holds once the first version was pushed to it.
    let empty = Held::of(0, &Default::default(), &Default::default());
    let (_, _, held) = empty
        .resolve(&request(&empty, &first))
        .expect("resolve the first version");
    let mut group = c.benchmark_group("resolve");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let changes = [
        ("new_route", with_a_route_added(&store)),
        (
            "endpoint_swap",
            fixture::with_an_endpoint_swapped(&store, INGRESSES / 2),
        ),
    ];
    for (name, changed) in changes {
        let next = renderer
            .render_after(&changed, Some(&first.plan))
            .expect("render the change");
        let request = request(&held, &next);
        // Check once that the change is pushed as intended.
        let (files, plan, _) = held.resolve(&request).expect("resolve");
        assert_eq!(files, *next.files, "{name}: the files");
        let plan: &hawser_plan::Plan = plan.borrow();
        assert_eq!(*plan, *next.plan, "{name}: the plan");
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| black_box(held.resolve(&request).expect("resolve")));
        });
    }
    group.finish();
}

criterion_group!(benches, resolve);
criterion_main!(benches);
