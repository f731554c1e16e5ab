//! Gateway API: GRPCRoutes route gRPC calls, sent as HTTP/2 in clear text
//! with prior knowledge, by service and method (exact, service only, and by
//! regular expression) to backends spoken to over HTTP/2 (fixture
//! `gateway_grpc/`).

use crate::support::{Gateway, INFRA, Vars, pod, serve_gateway};

const HOST: &str = "grpc.example.com";
const ECHO_SERVICE: &str = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_grpc",
        &[
            pod(INFRA, "grpc-infra-backend-v1", "grpc-infra-backend-v1-0"),
            pod(INFRA, "grpc-infra-backend-v2", "grpc-infra-backend-v2-0"),
            pod(INFRA, "grpc-infra-backend-v3", "grpc-infra-backend-v3-0"),
        ],
        Vars::new(),
    )
    .await
}

#[tokio::test]
async fn an_exact_service_and_method_reach_their_backend_over_http2() {
    let gw = gateway().await;
    let reply = gw
        .expect_grpc_backend(
            HOST,
            &format!("/{ECHO_SERVICE}/Echo"),
            INFRA,
            "grpc-infra-backend-v1",
        )
        .await;
    assert_eq!(reply.method, "POST");
    assert_eq!(
        reply.headers.get("content-type"),
        Some(&vec!["application/grpc".to_string()])
    );
    // Another method of the service is not matched.
    gw.expect_grpc_status(HOST, &format!("/{ECHO_SERVICE}/EchoTwo"), 404)
        .await;
}

#[tokio::test]
async fn a_service_match_takes_every_method() {
    let gw = gateway().await;
    for method in ["A", "B_2"] {
        gw.expect_grpc_backend(
            HOST,
            &format!("/pkg.Other/{method}"),
            INFRA,
            "grpc-infra-backend-v2",
        )
        .await;
    }
    gw.expect_grpc_status(HOST, "/pkg.OtherX/A", 404).await;
}

#[tokio::test]
async fn a_method_regex_matches_the_whole_method_of_any_service() {
    let gw = gateway().await;
    gw.expect_grpc_backend(HOST, "/pkg.Any/StreamUp", INFRA, "grpc-infra-backend-v3")
        .await;
    gw.expect_grpc_status(HOST, "/pkg.Any/UpStream", 404).await;
}
