//! Gateway API: a new endpoint of a GRPCRoute's Service is added to its h2c
//! backend at runtime, without a reload, and gRPC calls reach it over HTTP/2
//! (fixture `gateway_grpc_endpoints/`).

use crate::support;

use std::collections::BTreeSet;
use std::time::Instant;

use support::{INFRA, TIMEOUT, Vars, pod, serve_gateway};

const HOST: &str = "grpc.example.com";

/// The EndpointSlice with both pods.
fn both_pods(gw: &support::Gateway) -> String {
    let echos = gw.backends.echos();
    let port = echos[0].addr.port();
    let addresses: Vec<String> = echos
        .iter()
        .map(|e| format!("  - addresses: [\"{}\"]\n", e.addr.ip()))
        .collect();
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: grpc-churn-1\n  \
         namespace: {INFRA}\n  labels: {{ kubernetes.io/service-name: grpc-churn }}\n\
         addressType: IPv4\nports: [{{ name: http, port: {port} }}]\nendpoints:\n{}",
        addresses.concat()
    )
}

#[tokio::test]
async fn a_new_endpoint_is_added_at_runtime_and_spoken_to_over_http2() {
    let gw = serve_gateway(
        "gateway_grpc_endpoints",
        &[
            pod(INFRA, "grpc-churn", "grpc-churn-0"),
            pod(INFRA, "grpc-churn", "grpc-churn-1"),
        ],
        Vars::new(),
    )
    .await;
    let reply = gw
        .expect_grpc_backend(HOST, "/pkg.Echo/Get", INFRA, "grpc-churn")
        .await;
    assert_eq!(reply.pod, "grpc-churn-0");

    let before = gw.desired_generation().await;
    gw.write_manifest("slice.yaml", &both_pods(&gw));
    gw.expect_outcome_after(before, "runtime").await;

    let deadline = Instant::now() + TIMEOUT;
    let mut seen = BTreeSet::new();
    while seen.len() < 2 {
        let reply = gw
            .expect_grpc_backend(HOST, "/pkg.Echo/Get", INFRA, "grpc-churn")
            .await;
        seen.insert(reply.pod);
        assert!(Instant::now() < deadline, "only {seen:?} answered");
    }
}
