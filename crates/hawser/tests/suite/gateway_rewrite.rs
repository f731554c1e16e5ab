//! Gateway API: a URLRewrite changes the path (full or the matched prefix)
//! and the host the backend sees (fixture `gateway_rewrite/`).

use crate::support::{Gateway, INFRA, Request, Vars, pod, serve_gateway};

const BACKEND: &str = "infra-backend-v1";
const HOST: &str = "rewrite.example.com";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_rewrite",
        &[pod(INFRA, BACKEND, "infra-backend-v1-0")],
        Vars::new(),
    )
    .await
}

/// Asserts the backend saw the request at `path` with Host `host`.
async fn expect_rewritten(gw: &Gateway, target: &str, path: &str, host: &str) {
    let reply = gw
        .expect_backend(&Request::get(HOST, target), INFRA, BACKEND)
        .await;
    assert_eq!(
        (reply.path.as_str(), reply.host.as_str()),
        (path, host),
        "{target}"
    );
}

#[tokio::test]
async fn prefix_replacement_keeps_the_rest_of_the_path() {
    let gw = gateway().await;
    expect_rewritten(&gw, "/prefix/one", "/one", HOST).await;
    expect_rewritten(&gw, "/prefix/one/two", "/one/two", HOST).await;
    expect_rewritten(&gw, "/prefix/one/two?q=1", "/one/two?q=1", HOST).await;
    expect_rewritten(&gw, "/strip-prefix/three", "/three", HOST).await;
    expect_rewritten(&gw, "/strip-prefix", "/", HOST).await;
}

#[tokio::test]
async fn full_path_replacement() {
    let gw = gateway().await;
    expect_rewritten(&gw, "/full/one/two", "/one", HOST).await;
    expect_rewritten(&gw, "/full/one?q=1", "/one?q=1", HOST).await;
}

#[tokio::test]
async fn hostname_replacement() {
    let gw = gateway().await;
    expect_rewritten(&gw, "/host/x", "/host/x", "one.example.org").await;
}
