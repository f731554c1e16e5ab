//! Path rules: Exact, Prefix (element-wise) and ImplementationSpecific (as
//! Prefix), longest match first, Exact before Prefix at the same path, and
//! the query string ignored (fixture `path_rules/`).

use crate::support::{Served, pod, serve};

const HOST: &str = "paths.example.com";

async fn serve_paths() -> Served {
    let pods: Vec<_> = [
        "exact-foo",
        "prefix-foo",
        "prefix-foo-bar",
        "impl-specific",
        "exact-only",
        "root",
    ]
    .iter()
    .map(|service| pod("paths", service, &format!("{service}-0")))
    .collect();
    serve("path_rules", &pods).await
}

/// Asserts each `(request target, Service)` pair on [`HOST`].
async fn expect_routes(ingress: &Served, table: &[(&str, &str)]) {
    for (target, service) in table {
        let reply = ingress.expect_routed_to(HOST, target, service).await;
        assert_eq!(reply.path, *target, "the backend sees the target unchanged");
    }
}

#[tokio::test]
async fn prefix_matches_whole_path_elements() {
    let ingress = serve_paths().await;
    expect_routes(
        &ingress,
        &[
            ("/foo/", "prefix-foo"),
            ("/foo/x", "prefix-foo"),
            ("/foo/x/y", "prefix-foo"),
            ("/foo//x", "prefix-foo"),
            ("/foobar", "root"),
            ("/foo-x", "root"),
            ("/fo", "root"),
            ("/FOO/x", "root"),
        ],
    )
    .await;
}

#[tokio::test]
async fn trailing_slash_of_a_prefix_rule_is_ignored() {
    let ingress = serve_paths().await;
    expect_routes(
        &ingress,
        &[
            ("/foo/bar", "prefix-foo-bar"),
            ("/foo/bar/", "prefix-foo-bar"),
            ("/foo/bar/baz", "prefix-foo-bar"),
            ("/foo/barn", "prefix-foo"),
        ],
    )
    .await;
}

#[tokio::test]
async fn exact_matches_only_the_path_itself() {
    let ingress = serve_paths().await;
    expect_routes(
        &ingress,
        &[
            ("/exact-only", "exact-only"),
            ("/exact-only/", "root"),
            ("/exact-only/x", "root"),
            ("/exact-onlyx", "root"),
            ("/Exact-Only", "root"),
        ],
    )
    .await;
}

#[tokio::test]
async fn exact_wins_over_prefix_for_the_same_path() {
    let ingress = serve_paths().await;
    expect_routes(&ingress, &[("/foo", "exact-foo"), ("/foo/", "prefix-foo")]).await;
}

#[tokio::test]
async fn implementation_specific_behaves_as_prefix() {
    let ingress = serve_paths().await;
    expect_routes(
        &ingress,
        &[
            ("/impl", "impl-specific"),
            ("/impl/", "impl-specific"),
            ("/impl/a/b", "impl-specific"),
            ("/implx", "root"),
        ],
    )
    .await;
}

#[tokio::test]
async fn longest_prefix_wins_and_root_catches_all() {
    let ingress = serve_paths().await;
    expect_routes(
        &ingress,
        &[
            ("/foo/bar/x", "prefix-foo-bar"),
            ("/foo/ba", "prefix-foo"),
            ("/", "root"),
            ("/anything/else", "root"),
            ("/f", "root"),
        ],
    )
    .await;
}

#[tokio::test]
async fn query_string_does_not_affect_matching() {
    let ingress = serve_paths().await;
    expect_routes(
        &ingress,
        &[
            ("/foo?x=1", "exact-foo"),
            ("/foo?", "exact-foo"),
            ("/foo/?a=/b", "prefix-foo"),
            ("/exact-only?q=/exact-only/x", "exact-only"),
            ("/foo/bar?x", "prefix-foo-bar"),
            ("/foobar?/foo", "root"),
        ],
    )
    .await;
}

/// HAProxy matches the raw path, so a dot segment could carry a request past
/// its prefix rule to a backend that resolves it into a path another rule
/// owns (`/foo/../exact-only`). Such requests are refused, also when the dots
/// or the slash are percent-encoded; a dot inside a segment is fine.
#[tokio::test]
async fn dot_segments_are_refused() {
    let ingress = serve_paths().await;
    for path in [
        "/foo/../exact-only",
        "/impl/../foo/bar",
        "/foo/./bar",
        "/foo/..",
        "/foo/%2e%2e/exact-only",
        "/foo/.%2E/exact-only",
        "/foo/..%2fexact-only",
    ] {
        ingress.expect_status(HOST, path, 400).await;
    }
    ingress
        .expect_routed_to(HOST, "/foo/.well-known", "prefix-foo")
        .await;
    ingress
        .expect_routed_to(HOST, "/foo/a..b", "prefix-foo")
        .await;
}
