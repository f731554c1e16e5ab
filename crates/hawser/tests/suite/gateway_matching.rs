//! Gateway API: HTTPRoute matches on path (Exact, PathPrefix,
//! RegularExpression), headers (exact, regex), query parameters and method,
//! tried in the spec's precedence order (fixture `gateway_matching/`).

use crate::support::{Gateway, INFRA, Request, Vars, pod, serve_gateway};

const HOST: &str = "match.example.com";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_matching",
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
async fn paths_match_exactly_by_prefix_and_by_regex() {
    let gw = gateway().await;
    let get = |path| Request::get(HOST, path);
    gw.expect_backend(&get("/exact"), INFRA, "infra-backend-v1")
        .await;
    // Not the exact path: the catch-all rule.
    gw.expect_backend(&get("/exact/more"), INFRA, "infra-backend-v1")
        .await;
    gw.expect_backend(&get("/prefix"), INFRA, "infra-backend-v2")
        .await;
    gw.expect_backend(&get("/prefix/one"), INFRA, "infra-backend-v2")
        .await;
    gw.expect_backend(&get("/prefixed"), INFRA, "infra-backend-v1")
        .await;
    let regex = |path| Request::get("regex.example.com", path);
    gw.expect_backend(&regex("/v2/a"), INFRA, "infra-backend-v3")
        .await;
    gw.expect_backend(&regex("/v10/a/b"), INFRA, "infra-backend-v3")
        .await;
    // The whole path must match.
    gw.expect_status(&regex("/x/v2/a"), 404).await;
    gw.expect_status(&regex("/vx/a"), 404).await;
}

#[tokio::test]
async fn headers_match_exactly_and_by_regex() {
    let gw = gateway().await;
    let get = || Request::get(HOST, "/");
    gw.expect_backend(&get().header("version", "two"), INFRA, "infra-backend-v2")
        .await;
    gw.expect_backend(&get().header("Version", "two"), INFRA, "infra-backend-v2")
        .await;
    gw.expect_backend(&get().header("version", "twos"), INFRA, "infra-backend-v1")
        .await;
    for env in ["canary", "beta7"] {
        gw.expect_backend(&get().header("x-env", env), INFRA, "infra-backend-v3")
            .await;
    }
    gw.expect_backend(
        &get().header("x-env", "canary-1"),
        INFRA,
        "infra-backend-v1",
    )
    .await;
}

#[tokio::test]
async fn query_parameters_and_methods_match() {
    let gw = gateway().await;
    gw.expect_backend(
        &Request::get(HOST, "/?animal=whale"),
        INFRA,
        "infra-backend-v3",
    )
    .await;
    gw.expect_backend(
        &Request::get(HOST, "/?animal=dolphin"),
        INFRA,
        "infra-backend-v1",
    )
    .await;
    let post = Request::get(HOST, "/")
        .method("POST")
        .header("content-length", "0");
    let reply = gw.expect_backend(&post, INFRA, "infra-backend-v2").await;
    assert_eq!(reply.method, "POST");
    let delete = Request::get(HOST, "/").method("DELETE");
    gw.expect_backend(&delete, INFRA, "infra-backend-v1").await;
}

#[tokio::test]
async fn precedence_goes_path_then_method_then_headers_then_query() {
    let gw = gateway().await;
    // An exact path outranks a header match.
    gw.expect_backend(
        &Request::get(HOST, "/exact")
            .header("version", "two")
            .header("x-env", "canary"),
        INFRA,
        "infra-backend-v1",
    )
    .await;
    // A method match outranks header and query matches.
    gw.expect_backend(
        &Request::get(HOST, "/?animal=whale")
            .method("POST")
            .header("content-length", "0")
            .header("x-env", "canary"),
        INFRA,
        "infra-backend-v2",
    )
    .await;
    // A header match outranks a query match.
    gw.expect_backend(
        &Request::get(HOST, "/?animal=whale").header("x-env", "canary"),
        INFRA,
        "infra-backend-v3",
    )
    .await;
    gw.expect_backend(
        &Request::get(HOST, "/?animal=whale").header("version", "two"),
        INFRA,
        "infra-backend-v2",
    )
    .await;
}
