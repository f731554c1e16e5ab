//! Gateway API: a TCP listener on a port of its own hands each connection,
//! as it is, to the backend of its TCPRoute; a new endpoint joins at
//! runtime, without a reload; the Gateway's HTTP listener keeps routing
//! HTTP (fixture `gateway_tcp_route/`).

use crate::support;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Instant;

use support::{Gateway, INFRA, Request, Run, TIMEOUT, Vars, pod, serve_gateway};

async fn gateway() -> (Gateway, SocketAddr) {
    let tcp = Run::spare_address();
    let mut vars = Vars::new();
    vars.insert("TCP_PORT".to_string(), tcp.port().to_string());
    let gw = serve_gateway(
        "gateway_tcp_route",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(INFRA, "infra-backend-v2", "infra-backend-v2-0"),
            pod(INFRA, "infra-backend-v2", "infra-backend-v2-1"),
        ],
        vars,
    )
    .await;
    (gw, tcp)
}

#[tokio::test]
async fn a_tcp_route_passes_connections_through_to_its_backend() {
    let (gw, tcp) = gateway().await;
    let response = gw.get_on(tcp, "anything.example.com", "/raw").await;
    assert_eq!(response.status, 200, "{}", response.text());
    let reply = response.echo();
    assert_eq!(
        (reply.namespace.as_str(), reply.service.as_str()),
        (INFRA, "infra-backend-v2")
    );
    // HAProxy did not read the request: no header of its own was added.
    assert!(
        !reply.headers.contains_key("x-forwarded-proto"),
        "{reply:?}"
    );
    assert!(!reply.headers.contains_key("x-forwarded-for"), "{reply:?}");
}

#[tokio::test]
async fn the_http_listener_keeps_routing_http() {
    let (gw, _) = gateway().await;
    let reply = gw
        .expect_backend(
            &Request::get("web.example.com", "/"),
            INFRA,
            "infra-backend-v1",
        )
        .await;
    assert_eq!(reply.headers["x-forwarded-proto"], ["http"], "{reply:?}");
}

/// infra-backend-v2's EndpointSlice with both its pods.
fn both_pods(gw: &Gateway) -> String {
    let echos: Vec<_> = gw
        .backends
        .echos()
        .iter()
        .filter(|e| e.pod.service == "infra-backend-v2")
        .collect();
    let addresses: Vec<String> = echos
        .iter()
        .map(|e| format!("  - addresses: [\"{}\"]\n", e.addr.ip()))
        .collect();
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: infra-backend-v2-1\n  \
         namespace: {INFRA}\n  labels: {{ kubernetes.io/service-name: infra-backend-v2 }}\n\
         addressType: IPv4\nports: [{{ name: http, port: {} }}]\nendpoints:\n{}",
        echos[0].addr.port(),
        addresses.concat()
    )
}

#[tokio::test]
async fn a_new_endpoint_joins_at_runtime() {
    let (gw, tcp) = gateway().await;
    let reply = gw.get_on(tcp, "db.example.com", "/").await.echo();
    assert_eq!(reply.pod, "infra-backend-v2-0");

    let before = gw.desired_generation().await;
    gw.write_manifest("slice.yaml", &both_pods(&gw));
    gw.expect_outcome_after(before, "runtime").await;

    let deadline = Instant::now() + TIMEOUT;
    let mut seen = BTreeSet::new();
    while seen.len() < 2 {
        seen.insert(gw.get_on(tcp, "db.example.com", "/").await.echo().pod);
        assert!(Instant::now() < deadline, "only {seen:?} answered");
    }
}
