//! Gateway API: weighted backendRefs share requests in proportion to their
//! weights; a weight of 0 gets none, and a rule whose every weight is 0
//! answers 500 (fixture `gateway_weights/`).

use crate::support::{Gateway, INFRA, Request, Vars, pod, serve_gateway};

const HOST: &str = "weights.example.com";
/// Requests sent to measure a distribution.
const REQUESTS: usize = 300;
/// How far a measured share may be from the weight's share (4 standard
/// deviations at 300 requests).
const TOLERANCE: f64 = 0.1;

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_weights",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(INFRA, "infra-backend-v2", "infra-backend-v2-0"),
            pod(INFRA, "infra-backend-v3", "infra-backend-v3-0"),
        ],
        Vars::new(),
    )
    .await
}

#[tokio::test]
async fn requests_are_shared_by_weight_and_weight_zero_gets_none() {
    let gw = gateway().await;
    let seen = gw.count_backends(&Request::get(HOST, "/"), REQUESTS).await;
    let share = |service: &str| seen.get(service).copied().unwrap_or(0) as f64 / REQUESTS as f64;
    assert!(
        (share("infra-backend-v1") - 0.7).abs() < TOLERANCE,
        "{seen:?}"
    );
    assert!(
        (share("infra-backend-v2") - 0.3).abs() < TOLERANCE,
        "{seen:?}"
    );
    assert_eq!(seen.get("infra-backend-v3"), None, "{seen:?}");
}

#[tokio::test]
async fn every_weight_zero_answers_500() {
    let gw = gateway().await;
    gw.expect_status(&Request::get(HOST, "/zero"), 500).await;
}
