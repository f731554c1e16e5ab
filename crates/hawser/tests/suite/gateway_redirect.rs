//! Gateway API: a RequestRedirect answers with the Location and status its
//! fields make, with the spec's defaults: the scheme's default port is left
//! out, an unset port follows the scheme or else the listener (port 80),
//! and a prefix replacement keeps the rest of the path
//! (fixture `gateway_redirect/`).

use crate::support::{Gateway, INFRA, Request, Vars, pod, serve_gateway};

const HOST: &str = "redirect.example.com";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_redirect",
        &[pod(INFRA, "infra-backend-v1", "infra-backend-v1-0")],
        Vars::new(),
    )
    .await
}

#[tokio::test]
async fn scheme_and_port() {
    let gw = gateway().await;
    let get = |path| Request::get(HOST, path);
    gw.expect_redirect(&get("/scheme"), 302, "https://redirect.example.com/scheme")
        .await;
    gw.expect_redirect(
        &get("/scheme-and-port"),
        302,
        "https://redirect.example.com:8443/scheme-and-port",
    )
    .await;
    gw.expect_redirect(&get("/port"), 302, "http://redirect.example.com:8083/port")
        .await;
}

#[tokio::test]
async fn hostname_keeps_path_and_query() {
    let gw = gateway().await;
    gw.expect_redirect(
        &Request::get("Redirect.Example.com:80", "/hostname/a?b=c"),
        302,
        "http://example.org/hostname/a?b=c",
    )
    .await;
}

#[tokio::test]
async fn status_codes() {
    let gw = gateway().await;
    gw.expect_redirect(
        &Request::get(HOST, "/status"),
        301,
        "http://redirect.example.com/status",
    )
    .await;
    gw.expect_redirect(
        &Request::get(HOST, "/see-other"),
        303,
        "http://redirect.example.com/see-other",
    )
    .await;
}

#[tokio::test]
async fn full_path_and_prefix_replacement() {
    let gw = gateway().await;
    let get = |path| Request::get(HOST, path);
    gw.expect_redirect(
        &get("/full/x"),
        307,
        "http://redirect.example.com/full-path-replacement",
    )
    .await;
    gw.expect_redirect(
        &get("/prefix"),
        308,
        "http://redirect.example.com/replacement-prefix",
    )
    .await;
    gw.expect_redirect(
        &get("/prefix/one/two"),
        308,
        "http://redirect.example.com/replacement-prefix/one/two",
    )
    .await;
    gw.expect_redirect(&get("/strip/one"), 302, "http://redirect.example.com/one")
        .await;
    gw.expect_redirect(&get("/strip"), 302, "http://redirect.example.com/")
        .await;
}
