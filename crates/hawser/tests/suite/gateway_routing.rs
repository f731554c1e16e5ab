//! Gateway API: HTTPRoutes route by hostname and path, to Services in the
//! route's namespace; a route may attach to a Gateway in another namespace
//! (fixture `gateway_routing/`).

use crate::support::{Gateway, INFRA, Request, Vars, WEB, pod, serve_gateway};

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_routing",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(INFRA, "infra-backend-v2", "infra-backend-v2-0"),
            pod(WEB, "web-backend", "web-backend-0"),
        ],
        Vars::new(),
    )
    .await
}

#[tokio::test]
async fn routes_by_hostname_and_path() {
    let gw = gateway().await;
    let reply = gw
        .expect_backend(
            &Request::get("foo.example.com", "/"),
            INFRA,
            "infra-backend-v1",
        )
        .await;
    assert_eq!(reply.pod, "infra-backend-v1-0");
    assert_eq!(reply.path, "/");
    // The host is matched without its port and in any case.
    gw.expect_backend(
        &Request::get("FOO.example.com:80", "/a/b"),
        INFRA,
        "infra-backend-v1",
    )
    .await;
    gw.expect_backend(
        &Request::get("paths.example.com", "/v2"),
        INFRA,
        "infra-backend-v2",
    )
    .await;
    gw.expect_backend(
        &Request::get("paths.example.com", "/v2/x?y=1"),
        INFRA,
        "infra-backend-v2",
    )
    .await;
    // A prefix matches whole path segments only.
    gw.expect_backend(
        &Request::get("paths.example.com", "/v2x"),
        INFRA,
        "infra-backend-v1",
    )
    .await;
    gw.expect_backend(
        &Request::get("paths.example.com", "/"),
        INFRA,
        "infra-backend-v1",
    )
    .await;
}

#[tokio::test]
async fn a_wildcard_hostname_matches_any_number_of_labels() {
    let gw = gateway().await;
    for host in ["a.wildcard.example.com", "a.b.wildcard.example.com"] {
        gw.expect_backend(&Request::get(host, "/"), INFRA, "infra-backend-v2")
            .await;
    }
    gw.expect_status(&Request::get("wildcard.example.com", "/"), 404)
        .await;
}

#[tokio::test]
async fn a_route_in_another_namespace_serves_its_own_services() {
    let gw = gateway().await;
    gw.expect_backend(&Request::get("web.example.com", "/"), WEB, "web-backend")
        .await;
}

#[tokio::test]
async fn a_host_no_route_names_is_not_found() {
    let gw = gateway().await;
    gw.expect_status(&Request::get("other.example.com", "/"), 404)
        .await;
}
