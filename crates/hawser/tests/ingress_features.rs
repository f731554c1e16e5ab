//! Ingress features (`hawser.dev/*` annotations, docs/annotations.md) served
//! by a real HAProxy: HTTPS redirects with their code, HSTS with its
//! parameters, source allow- and deny-lists, permanent and temporary
//! redirects, app-root; another controller's access control refused, its
//! other annotations reported as ignored; a bad value refuses its Ingress
//! alone, naming the annotation (fixture `ingress_features/`).
//!
//! Requests come from 127.0.0.1 (the loopback source of every connection
//! here), so `127.0.0.0/8` is "this client".

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

mod support;

use support::{Served, TestCertificate, Vars, pod};

async fn serve_features() -> Served {
    let mut vars = Vars::new();
    let cert = TestCertificate::self_signed("secure.example.com");
    vars.insert("SECURE_TLS_CRT".into(), cert.cert_yaml());
    vars.insert("SECURE_TLS_KEY".into(), cert.key_yaml());
    support::serve_with("ingress_features", &[pod("features", "app", "app-0")], vars).await
}

#[tokio::test]
async fn tls_hosts_redirect_with_their_code_and_send_their_hsts() {
    let ingress = serve_features().await;
    let response = ingress.get("secure.example.com", "/cart").await;
    assert_eq!(response.status, 301, "hawser.dev/ssl-redirect-code");
    let location = format!("https://secure.example.com:{}/cart", ingress.https.port());
    assert_eq!(response.header("location"), Some(location.as_str()));

    let secure = ingress
        .get_tls(Some("secure.example.com"), "secure.example.com", "/cart")
        .await;
    assert_eq!(secure.status, 200);
    assert_eq!(
        secure.header("strict-transport-security"),
        Some("max-age=600; includeSubDomains; preload")
    );

    // The Ingress's other host is not one of its TLS hosts.
    ingress
        .expect_routed_to("plain.example.com", "/cart", "app")
        .await;
    let other = ingress
        .get_tls(Some("plain.example.com"), "plain.example.com", "/")
        .await;
    assert_eq!(other.status, 200);
    assert_eq!(other.header("strict-transport-security"), None);
}

#[tokio::test]
async fn source_ranges_allow_and_deny_clients() {
    let ingress = serve_features().await;
    let outside = ingress.get("members.example.com", "/").await;
    assert_eq!(outside.status, 403, "not in the allow-list");
    ingress
        .expect_routed_to("local.example.com", "/", "app")
        .await;
    let denied = ingress.get("blocked.example.com", "/").await;
    assert_eq!(denied.status, 403, "in the deny-list");
    // Over HTTPS alike (the default certificate: no TLS for these hosts).
    let denied = ingress
        .get_tls(Some("blocked.example.com"), "blocked.example.com", "/")
        .await;
    assert_eq!(denied.status, 403);
}

#[tokio::test]
async fn redirects_and_app_root() {
    let ingress = serve_features().await;
    let moved = ingress.get("moved.example.com", "/any/path").await;
    assert_eq!(moved.status, 301);
    assert_eq!(
        moved.header("location"),
        Some("https://new.example.com/landing")
    );
    let away = ingress.get("away.example.com", "/").await;
    assert_eq!(away.status, 302);
    assert_eq!(
        away.header("location"),
        Some("https://maintenance.example.com/")
    );

    let root = ingress.get("rooted.example.com", "/").await;
    assert_eq!(root.status, 302);
    assert_eq!(root.header("location"), Some("/app/"));
    ingress
        .expect_routed_to("rooted.example.com", "/app/", "app")
        .await;
}

#[tokio::test]
async fn foreign_and_bad_annotations_are_refused_or_reported_never_dropped_silently() {
    let ingress = serve_features().await;
    let stderr = &ingress.render.stderr;
    assert!(
        stderr.contains(
            "rejected: Ingress features/nginx-allowlist: annotation nginx.ingress.kubernetes.io/whitelist-source-range asks for access control"
        ),
        "{stderr}"
    );
    ingress
        .expect_no_route("nginx-allowlist.example.com", "/")
        .await;
    assert!(
        stderr.contains(
            r#"rejected: Ingress features/bad-code: annotation hawser.dev/ssl-redirect-code: "200" is not one of 301, 302, 303, 307, 308"#
        ),
        "{stderr}"
    );
    ingress.expect_no_route("bad-code.example.com", "/").await;

    assert!(
        stderr.contains(
            "warning: Ingress features/migrated: annotation nginx.ingress.kubernetes.io/proxy-read-timeout is not served by hawser and is ignored"
        ),
        "{stderr}"
    );
    ingress
        .expect_routed_to("migrated.example.com", "/", "app")
        .await;
}
