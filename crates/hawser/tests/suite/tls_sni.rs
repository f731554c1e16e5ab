//! TLS: each host is served the certificate of the Secret its Ingress names,
//! chosen by SNI; other names, and no SNI, get the generated default
//! certificate; ALPN offers HTTP/2 (fixture `tls_sni/`, with certificates
//! generated at run time).

use crate::support;

use support::{NO_ROUTE_BODY, Served, TestCertificate, Vars, pod};

/// The subject of the certificate hawser generates when none is configured.
const DEFAULT_CERTIFICATE_CN: &str = "hawser default certificate";

async fn serve_sites() -> Served {
    let mut vars = Vars::new();
    for (prefix, host) in [("A_TLS", "a.example.com"), ("B_TLS", "b.example.com")] {
        let cert = TestCertificate::self_signed(host);
        vars.insert(format!("{prefix}_CRT"), cert.cert_yaml());
        vars.insert(format!("{prefix}_KEY"), cert.key_yaml());
    }
    let pods = [
        pod("tls", "site-a", "site-a-0"),
        pod("tls", "site-b", "site-b-0"),
    ];
    support::serve_with("tls_sni", &pods, vars).await
}

#[tokio::test]
async fn each_host_gets_its_certificate_and_backend() {
    let ingress = serve_sites().await;
    for (host, service) in [("a.example.com", "site-a"), ("b.example.com", "site-b")] {
        let response = ingress.get_tls(Some(host), host, "/secure").await;
        let tls = response.tls();
        assert_eq!(tls.subject_cn.as_deref(), Some(host), "SNI {host}: {tls:?}");
        assert_eq!(tls.dns_names, [host], "SNI {host}: {tls:?}");
        assert_eq!(response.status, 200, "{:?}", response.text());
        let reply = response.echo();
        assert_eq!(reply.service, service);
        assert_eq!(reply.path, "/secure");
        assert_eq!(
            reply.headers.get("x-forwarded-proto"),
            Some(&vec!["https".to_string()])
        );
    }
}

#[tokio::test]
async fn unknown_or_missing_sni_gets_the_default_certificate() {
    let ingress = serve_sites().await;
    let response = ingress
        .get_tls(Some("c.example.com"), "c.example.com", "/")
        .await;
    assert_eq!(
        response.tls().subject_cn.as_deref(),
        Some(DEFAULT_CERTIFICATE_CN)
    );
    // c.example.com has no rule either: hawser's own 404.
    assert_eq!(response.status, 404);
    assert_eq!(response.text(), NO_ROUTE_BODY);

    // No SNI at all (the client connects by IP address); routing still
    // follows the Host header.
    let response = ingress.get_tls(None, "a.example.com", "/").await;
    assert_eq!(
        response.tls().subject_cn.as_deref(),
        Some(DEFAULT_CERTIFICATE_CN)
    );
    assert_eq!(response.echo().service, "site-a");
}

#[tokio::test]
async fn http2_is_offered_through_alpn_and_routed_by_authority() {
    let ingress = serve_sites().await;
    let response = ingress.get_h2("b.example.com", "/over/h2").await;
    let tls = response.tls();
    assert_eq!(tls.alpn.as_deref(), Some("h2"));
    assert_eq!(tls.subject_cn.as_deref(), Some("b.example.com"));
    assert_eq!(response.status, 200, "{:?}", response.text());
    let reply = response.echo();
    assert_eq!(reply.service, "site-b");
    assert_eq!(reply.path, "/over/h2");
}

/// Plain HTTP to an Ingress's TLS host is redirected to HTTPS (308, the
/// HTTPS port and the query kept), except ACME HTTP-01 challenges, which
/// are served; HTTPS answers carry HSTS (`hawser.dev/ssl-redirect` and
/// `hawser.dev/hsts` at their defaults).
#[tokio::test]
async fn plain_http_to_tls_hosts_redirects_to_https_except_acme_challenges() {
    let ingress = serve_sites().await;
    let response = ingress.get("a.example.com", "/shop?item=1").await;
    assert_eq!(response.status, 308, "{}", response.text());
    let location = format!("https://a.example.com:{}/shop?item=1", ingress.https.port());
    assert_eq!(response.header("location"), Some(location.as_str()));

    let reply = ingress
        .expect_routed_to(
            "a.example.com",
            "/.well-known/acme-challenge/token",
            "site-a",
        )
        .await;
    assert_eq!(
        reply.headers.get("x-forwarded-proto"),
        Some(&vec!["http".to_string()])
    );

    let secure = ingress
        .get_tls(Some("a.example.com"), "a.example.com", "/")
        .await;
    assert_eq!(secure.status, 200);
    assert_eq!(
        secure.header("strict-transport-security"),
        Some("max-age=31536000; includeSubDomains")
    );
    let plain = ingress
        .get("a.example.com", "/.well-known/acme-challenge/x")
        .await;
    assert_eq!(
        plain.header("strict-transport-security"),
        None,
        "not over HTTP"
    );
}
