//! Host rules: exact hosts, one-label wildcards and rules without a host,
//! matched case-insensitively and without the port (fixture `host_rules/`).

use crate::support::{Served, pod, serve};

async fn serve_hosts() -> Served {
    serve(
        "host_rules",
        &[
            pod("hosts", "exact-host", "exact-host-0"),
            pod("hosts", "wildcard-host", "wildcard-host-0"),
            pod("hosts", "any-host", "any-host-0"),
        ],
    )
    .await
}

#[tokio::test]
async fn exact_host_wins_over_wildcard_and_hostless_rules() {
    let ingress = serve_hosts().await;
    let reply = ingress
        .expect_routed_to("foo.example.com", "/", "exact-host")
        .await;
    assert_eq!(reply.namespace, "hosts");
    assert_eq!(reply.pod, "exact-host-0");
    assert_eq!(reply.host, "foo.example.com");
}

#[tokio::test]
async fn wildcard_matches_exactly_one_label() {
    let ingress = serve_hosts().await;
    ingress
        .expect_routed_to("a.example.com", "/", "wildcard-host")
        .await;
    ingress
        .expect_routed_to("bar-1.example.com", "/x/y", "wildcard-host")
        .await;
    // Two labels, and none, are not "one label": the host-less rule gets them.
    ingress
        .expect_routed_to("a.b.example.com", "/", "any-host")
        .await;
    ingress
        .expect_routed_to("a.foo.example.com", "/", "any-host")
        .await;
    ingress
        .expect_routed_to("example.com", "/", "any-host")
        .await;
}

#[tokio::test]
async fn hostless_rule_catches_other_hosts() {
    let ingress = serve_hosts().await;
    for host in ["other.test", "example.org", "localhost", "127.0.0.1"] {
        ingress.expect_routed_to(host, "/", "any-host").await;
    }
}

#[tokio::test]
async fn host_header_is_matched_case_insensitively_and_without_port() {
    let ingress = serve_hosts().await;
    for host in [
        "FOO.example.com",
        "Foo.Example.COM",
        "foo.example.com:80",
        "foo.example.com:8080",
        "FOO.EXAMPLE.COM:443",
    ] {
        let reply = ingress.expect_routed_to(host, "/", "exact-host").await;
        // The backend sees the Host header as the client sent it.
        assert_eq!(reply.host, host);
    }
    for host in ["A.Example.Com", "a.example.com:1234"] {
        ingress.expect_routed_to(host, "/", "wildcard-host").await;
    }
}
