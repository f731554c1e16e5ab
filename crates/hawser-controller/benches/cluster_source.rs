//! How long the cluster source takes from start to its first render, as the
//! cluster grows: the real kube-rs watchers list every kind from the fake API
//! server (pages of 500), each object is converted and trimmed, and the
//! whole cluster is rendered once. This is what a controller pays on start
//! and after it loses its watches.
//!
//! Each Ingress has one host and path to its own Service, whose EndpointSlice
//! holds three ready endpoints: three objects per Ingress. The fake API
//! server is filled once per size, outside the timed loop.
//!
//! ```text
//! cargo bench -p hawser-controller --bench cluster_source
//! ```

#![allow(
    clippy::expect_used,
    reason = "a benchmark fails loudly on a broken setup"
)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hawser_controller::cluster::{KubeSourceOptions, SourceConfig, run_kube};
use hawser_controller::cycle::{ControllerStatus, CycleRender, Deliver};
use hawser_fake_api::FakeApi;
use hawser_plan::Generation;
use hawser_render::{RenderConfig, Renderer};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

const SIZES: [usize; 2] = [1_000, 5_000];
const NAMESPACES: usize = 50;

fn object<K: serde::de::DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).expect("a valid object")
}

fn fill(fake: &FakeApi, ingresses: usize) {
    fake.apply::<networking::IngressClass>(&object(json!({
        "metadata": {"name": "hawser"},
        "spec": {"controller": "hawser.dev/ingress-controller"},
    })));
    for i in 0..ingresses {
        let namespace = format!("team-{}", i % NAMESPACES);
        let name = format!("app-{i}");
        fake.apply::<core::Service>(&object(json!({
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
        })));
        fake.apply::<discovery::EndpointSlice>(&object(json!({
            "metadata": {
                "name": format!("{name}-abcde"), "namespace": namespace,
                "labels": {"kubernetes.io/service-name": name},
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080}],
            "endpoints": (1..=3).map(|e| json!({
                "addresses": [format!("10.{}.{}.{e}", i / 250, i % 250)],
                "conditions": {"ready": true},
            })).collect::<Vec<_>>(),
        })));
        fake.apply::<networking::Ingress>(&object(json!({
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "ingressClassName": "hawser",
                "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [{
                    "path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": name, "port": {"number": 80}}},
                }]}}],
            },
        })));
    }
}

struct FirstRender(mpsc::UnboundedSender<usize>);

impl Deliver for FirstRender {
    fn deliver(&self, render: &CycleRender) {
        let _ = self.0.send(render.store.len());
    }
}

/// Starts a source, waits for its first render, stops it.
async fn first_render(client: kube::Client, renderer: Arc<Renderer>) -> usize {
    let (tx, mut delivered) = mpsc::unbounded_channel();
    let (status, _) = watch::channel(ControllerStatus::default());
    let (_configure, config) = watch::channel(SourceConfig {
        renderer: Some(renderer),
        options: KubeSourceOptions::default(),
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let source = tokio::spawn(run_kube(
        client,
        config,
        FirstRender(tx),
        Generation::new(1),
        None,
        status,
        async {
            let _ = stopped.await;
        },
    ));
    let objects = delivered.recv().await.expect("a first render");
    let _ = stop.send(());
    let _ = source.await;
    objects
}

fn cluster_source(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let renderer = Arc::new(Renderer::new(RenderConfig::default()).expect("a renderer"));
    let mut group = c.benchmark_group("cluster_source");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for size in SIZES {
        let (fake, client) = runtime.block_on(async { FakeApi::start() });
        fill(&fake, size);
        group.throughput(Throughput::Elements(size as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter(|| {
                let objects = runtime.block_on(first_render(client.clone(), Arc::clone(&renderer)));
                assert_eq!(objects, 3 * size + 1);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, cluster_source);
criterion_main!(benches);
