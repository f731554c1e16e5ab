//! Gateway API: a RequestMirror sends a copy of each request to a second
//! Service and ignores its answer; the client's answer comes from the rule's
//! backend alone (fixture `gateway_request_mirror/`). As the upstream
//! conformance suite does, the copy is seen in the mirror backend's log.

use crate::support::{Gateway, INFRA, Request, Vars, pod, serve_gateway};

const BACKEND: &str = "infra-backend-v1";
const MIRROR_V2: &str = "infra-backend-v2-0";
const MIRROR_V3: &str = "infra-backend-v3-0";
const HOST: &str = "mirror.example.com";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_request_mirror",
        &[
            pod(INFRA, BACKEND, "infra-backend-v1-0"),
            pod(INFRA, "infra-backend-v2", MIRROR_V2),
            pod(INFRA, "infra-backend-v3", MIRROR_V3),
        ],
        Vars::new(),
    )
    .await
}

#[tokio::test]
async fn the_backend_answers_and_the_mirror_receives_a_copy() {
    let gw = gateway().await;
    let reply = gw
        .expect_backend(&Request::get(HOST, "/mirror?probe=1"), INFRA, BACKEND)
        .await;
    assert_eq!(reply.path, "/mirror?probe=1");
    gw.expect_request_logged(MIRROR_V2, "GET", "/mirror?probe=1")
        .await;
    // Any method: DELETE the HTTP client sends as it is, PATCH through the
    // internal frontend, which restores it.
    for method in ["DELETE", "PATCH"] {
        let request = Request::get(HOST, "/mirror/method").method(method);
        let reply = gw.expect_backend(&request, INFRA, BACKEND).await;
        assert_eq!(reply.method, method);
        gw.expect_request_logged(MIRROR_V2, method, "/mirror/method")
            .await;
    }
    gw.expect_request_not_logged(MIRROR_V3, "GET", "/mirror?probe=1");
}

#[tokio::test]
async fn every_mirror_of_a_rule_receives_a_copy() {
    let gw = gateway().await;
    gw.expect_backend(&Request::get(HOST, "/multi-mirror"), INFRA, BACKEND)
        .await;
    gw.expect_request_logged(MIRROR_V2, "GET", "/multi-mirror")
        .await;
    gw.expect_request_logged(MIRROR_V3, "GET", "/multi-mirror")
        .await;
}

#[tokio::test]
async fn a_share_of_zero_mirrors_nothing() {
    let gw = gateway().await;
    gw.expect_backend(&Request::get(HOST, "/never"), INFRA, BACKEND)
        .await;
    // A copy made after it arrives: had /never been copied, it would be there.
    gw.expect_backend(&Request::get(HOST, "/mirror/after-never"), INFRA, BACKEND)
        .await;
    gw.expect_request_logged(MIRROR_V2, "GET", "/mirror/after-never")
        .await;
    gw.expect_request_not_logged(MIRROR_V2, "GET", "/never");
}

#[tokio::test]
async fn a_mirror_down_or_unresolved_never_changes_the_answer() {
    let gw = gateway().await;
    for path in ["/mirror-down", "/mirror-unresolved"] {
        for n in 0..5 {
            let target = format!("{path}?n={n}");
            let reply = gw
                .expect_backend(&Request::get(HOST, &target), INFRA, BACKEND)
                .await;
            assert_eq!(reply.path, target);
        }
    }
    // The rules still serve, and mirrors elsewhere still work.
    gw.expect_backend(&Request::get(HOST, "/mirror/still"), INFRA, BACKEND)
        .await;
    gw.expect_request_logged(MIRROR_V2, "GET", "/mirror/still")
        .await;
}
