//! Gateway API, maps first: HTTPRoute rules that only send a host and path
//! to one backend are served from the gateway map, so adding, changing and
//! removing them applies at runtime, without a reload; they keep the spec's
//! precedence against rules that match more (fixture `gateway_map_routes/`).

use crate::support::{Gateway, INFRA, Request, Vars, pod, serve_gateway};

const HOST: &str = "map.example.com";

async fn gateway() -> Gateway {
    serve_gateway(
        "gateway_map_routes",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(INFRA, "infra-backend-v2", "infra-backend-v2-0"),
        ],
        Vars::new(),
    )
    .await
}

/// HTTPRoute `added` for new.example.com to infra-backend-v2, its rule
/// saying `rule` (YAML, e.g. its matches) besides.
fn added_route(rule: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n\
         metadata: {{ name: added, namespace: {INFRA} }}\n\
         spec:\n  parentRefs: [{{ name: same-namespace }}]\n  hostnames: [\"new.example.com\"]\n  \
         rules:\n    - {rule}\n      backendRefs: [{{ name: infra-backend-v2, port: 8080 }}]\n"
    )
}

fn canary(path: &str) -> Request {
    Request::get(HOST, path).header("x-canary", "1")
}

#[tokio::test]
async fn map_rules_and_acl_rules_keep_the_spec_precedence() {
    let gw = gateway().await;
    gw.expect_backend(&Request::get(HOST, "/app/x"), INFRA, "infra-backend-v1")
        .await;
    gw.expect_backend(&Request::get(HOST, "/exact"), INFRA, "infra-backend-v1")
        .await;
    // Same path and a header match: the ACL rule ranks first.
    gw.expect_backend(&canary("/app/x"), INFRA, "infra-backend-v2")
        .await;
    // A longer path than the ACL rule's: the map rule ranks first, header or not.
    gw.expect_backend(&canary("/exact"), INFRA, "infra-backend-v1")
        .await;
    // Only the ACL rule matches.
    gw.expect_backend(&canary("/other"), INFRA, "infra-backend-v2")
        .await;
    assert_eq!(gw.send(&Request::get(HOST, "/other")).await.status, 404);
}

#[tokio::test]
async fn simple_routes_come_and_go_at_runtime() {
    let gw = gateway().await;
    assert_eq!(
        gw.send(&Request::get("new.example.com", "/")).await.status,
        404
    );

    let before = gw.desired_generation().await;
    gw.write_manifest("added.yaml", &added_route(""));
    gw.expect_outcome_after(before, "runtime").await;
    gw.expect_backend(
        &Request::get("new.example.com", "/"),
        INFRA,
        "infra-backend-v2",
    )
    .await;

    let before = gw.desired_generation().await;
    std::fs::remove_file(gw.manifests().join("added.yaml")).expect("remove the route");
    gw.expect_outcome_after(before, "runtime").await;
    assert_eq!(
        gw.send(&Request::get("new.example.com", "/")).await.status,
        404
    );
}

#[tokio::test]
async fn a_rule_that_matches_more_reloads() {
    let gw = gateway().await;
    let before = gw.desired_generation().await;
    gw.write_manifest("added.yaml", &added_route("matches: [{ method: POST }]"));
    gw.expect_outcome_after(before, "reload").await;
    gw.expect_backend(
        &Request::get("new.example.com", "/").method("POST"),
        INFRA,
        "infra-backend-v2",
    )
    .await;
}
