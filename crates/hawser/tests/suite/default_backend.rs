//! `spec.defaultBackend`: it answers every request no rule matches; without
//! one, such requests get a 404 (fixture `default_backend/`).

use crate::support;

use support::{Haproxy, Manifests, Pod, pod};

fn pods() -> [Pod; 2] {
    [
        pod("defaults", "app", "app-0"),
        pod("defaults", "fallback", "fallback-0"),
    ]
}

#[tokio::test]
async fn default_backend_gets_unmatched_requests() {
    let ingress = support::serve("default_backend", &pods()).await;
    ingress
        .expect_routed_to("app.example.com", "/app/x", "app")
        .await;
    // A known host with an unmatched path, an unknown host, no usable host.
    ingress
        .expect_routed_to("app.example.com", "/other", "fallback")
        .await;
    ingress
        .expect_routed_to("app.example.com", "/application", "fallback")
        .await;
    ingress
        .expect_routed_to("unknown.example.com", "/app", "fallback")
        .await;
    let reply = ingress
        .expect_routed_to("unknown.example.com", "/some/path?q=1", "fallback")
        .await;
    assert_eq!(reply.path, "/some/path?q=1");
    assert_eq!(reply.namespace, "defaults");
}

#[tokio::test]
async fn without_default_backend_unmatched_requests_get_404() {
    let backends = support::Backends::start(&pods());
    let manifests = Manifests::from_fixture("default_backend", &backends.vars());
    manifests.remove("fallback.yaml");
    let ingress = Haproxy::start(&manifests).await;
    ingress
        .expect_routed_to("app.example.com", "/app", "app")
        .await;
    ingress.expect_no_route("app.example.com", "/other").await;
    ingress.expect_no_route("app.example.com", "/").await;
    ingress.expect_no_route("unknown.example.com", "/app").await;
    ingress.expect_no_route("unknown.example.com", "/").await;
}
