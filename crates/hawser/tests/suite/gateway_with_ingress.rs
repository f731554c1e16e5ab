//! Gateway API and Ingress together: both are served on the HTTP port, the
//! Ingress keeps what no Gateway route matches, and a Gateway route wins
//! where both match (fixture `gateway_with_ingress/`).

use crate::support::{Gateway, INFRA, Request, Vars, pod, serve_gateway};

const HOST: &str = "shared.example.com";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_with_ingress",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(INFRA, "infra-backend-v2", "infra-backend-v2-0"),
        ],
        Vars::new(),
    )
    .await
}

#[tokio::test]
async fn the_ingress_serves_what_no_route_matches() {
    let gw = gateway().await;
    gw.expect_backend(&Request::get(HOST, "/"), INFRA, "infra-backend-v1")
        .await;
    gw.expect_backend(&Request::get(HOST, "/gatewayx"), INFRA, "infra-backend-v1")
        .await;
}

#[tokio::test]
async fn a_gateway_route_wins_where_both_match() {
    let gw = gateway().await;
    for path in ["/gateway", "/gateway/a", "/gateway/exact"] {
        gw.expect_backend(&Request::get(HOST, path), INFRA, "infra-backend-v2")
            .await;
    }
}
