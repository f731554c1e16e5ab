//! Gateway API: a RequestHeaderModifier sets, adds and removes request
//! headers before the backend sees them (fixture `gateway_request_headers/`).

use crate::support::{Gateway, INFRA, Request, Vars, expect_request_header, pod, serve_gateway};

const BACKEND: &str = "infra-backend-v1";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_request_headers",
        &[pod(INFRA, BACKEND, "infra-backend-v1-0")],
        Vars::new(),
    )
    .await
}

#[tokio::test]
async fn set_overwrites_and_creates_a_header() {
    let gw = gateway().await;
    let reply = gw
        .expect_backend(&Request::get("h.example.com", "/set"), INFRA, BACKEND)
        .await;
    expect_request_header(&reply, "x-header-set", &["set-overwrites-values"]);
    let given = Request::get("h.example.com", "/set").header("X-Header-Set", "some-other-value");
    let reply = gw.expect_backend(&given, INFRA, BACKEND).await;
    expect_request_header(&reply, "x-header-set", &["set-overwrites-values"]);
}

#[tokio::test]
async fn add_appends_to_what_the_client_sent() {
    let gw = gateway().await;
    let reply = gw
        .expect_backend(&Request::get("h.example.com", "/add"), INFRA, BACKEND)
        .await;
    expect_request_header(&reply, "x-header-add", &["add-appends-values"]);
    let given = Request::get("h.example.com", "/add").header("X-Header-Add", "some-other-value");
    let reply = gw.expect_backend(&given, INFRA, BACKEND).await;
    expect_request_header(
        &reply,
        "x-header-add",
        &["some-other-value", "add-appends-values"],
    );
}

#[tokio::test]
async fn remove_drops_the_header() {
    let gw = gateway().await;
    let given = Request::get("h.example.com", "/remove").header("X-Header-Remove", "val");
    let reply = gw.expect_backend(&given, INFRA, BACKEND).await;
    expect_request_header(&reply, "x-header-remove", &[]);
}

#[tokio::test]
async fn several_changes_apply_together_and_leave_other_routes_alone() {
    let gw = gateway().await;
    let given = Request::get("h.example.com", "/multiple")
        .header("X-Header-Set-2", "set-val-2")
        .header("X-Header-Add-2", "add-val-2")
        .header("X-Header-Remove-1", "remove-val-1")
        .header("X-Header-Remove-2", "remove-val-2")
        .header("Another-Header", "another-val");
    let reply = gw.expect_backend(&given, INFRA, BACKEND).await;
    expect_request_header(&reply, "x-header-set-1", &["header-set-1"]);
    expect_request_header(&reply, "x-header-set-2", &["header-set-2"]);
    expect_request_header(&reply, "x-header-add-1", &["header-add-1"]);
    expect_request_header(&reply, "x-header-add-2", &["add-val-2", "header-add-2"]);
    expect_request_header(&reply, "x-header-remove-1", &[]);
    expect_request_header(&reply, "x-header-remove-2", &[]);
    expect_request_header(&reply, "another-header", &["another-val"]);
    let other = Request::get("h.example.com", "/add").header("X-Header-Remove", "kept");
    let reply = gw.expect_backend(&other, INFRA, BACKEND).await;
    expect_request_header(&reply, "x-header-remove", &["kept"]);
    expect_request_header(&reply, "x-header-set", &[]);
}
