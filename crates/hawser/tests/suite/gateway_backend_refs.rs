//! Gateway API: a backendRef that does not resolve answers 500 for its share
//! of requests: a Service that does not exist, or one in another namespace
//! that no ReferenceGrant opens; a granted one is served
//! (fixture `gateway_backend_refs/`).

use crate::support::{Gateway, INFRA, Request, Vars, WEB, pod, serve_gateway};

const HOST: &str = "refs.example.com";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_backend_refs",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(WEB, "web-backend", "web-backend-0"),
            pod(WEB, "granted-backend", "granted-backend-0"),
        ],
        Vars::new(),
    )
    .await
}

#[tokio::test]
async fn a_missing_service_answers_500() {
    let gw = gateway().await;
    gw.expect_status(&Request::get(HOST, "/missing"), 500).await;
    gw.expect_backend(&Request::get(HOST, "/"), INFRA, "infra-backend-v1")
        .await;
}

#[tokio::test]
async fn another_namespace_needs_a_reference_grant() {
    let gw = gateway().await;
    gw.expect_status(&Request::get(HOST, "/not-granted"), 500)
        .await;
    gw.expect_backend(&Request::get(HOST, "/granted"), WEB, "granted-backend")
        .await;
}

#[tokio::test]
async fn an_unresolved_share_answers_500_and_the_rest_is_served() {
    let gw = gateway().await;
    let (mut served, mut failed) = (0, 0);
    for _ in 0..60 {
        match gw.send(&Request::get(HOST, "/half")).await.status {
            200 => served += 1,
            500 => failed += 1,
            other => panic!("status {other}"),
        }
    }
    assert!(served > 0 && failed > 0, "{served} served, {failed} failed");
}
