//! Gateway API: a ResponseHeaderModifier sets, adds and removes headers of
//! the backend's answer (fixture `gateway_response_headers/`).

use crate::support::{Gateway, INFRA, Request, Vars, pod, serve_gateway};

const BACKEND: &str = "infra-backend-v1";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_response_headers",
        &[pod(INFRA, BACKEND, "infra-backend-v1-0")],
        Vars::new(),
    )
    .await
}

/// The answer came from the echo server (its body), with these headers.
async fn expect_response_header(gw: &Gateway, path: &str, name: &str, value: Option<&str>) {
    let response = gw
        .expect_status(&Request::get("r.example.com", path), 200)
        .await;
    assert_eq!(response.echo().service, BACKEND);
    assert_eq!(
        response.header(name),
        value,
        "{path}: response header {name}"
    );
}

#[tokio::test]
async fn set_overwrites_the_backends_header() {
    let gw = gateway().await;
    expect_response_header(&gw, "/set", "content-type", Some("set-overwrites-values")).await;
}

#[tokio::test]
async fn add_adds_a_header() {
    let gw = gateway().await;
    expect_response_header(&gw, "/add", "x-header-add", Some("header-add")).await;
    expect_response_header(&gw, "/set", "x-header-add", None).await;
}

#[tokio::test]
async fn remove_drops_the_backends_header() {
    let gw = gateway().await;
    expect_response_header(&gw, "/add", "content-type", Some("application/json")).await;
    expect_response_header(&gw, "/remove", "content-type", None).await;
}
