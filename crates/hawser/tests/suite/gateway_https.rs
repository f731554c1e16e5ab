//! Gateway API: an HTTPS listener terminates TLS with its certificateRef,
//! served for the listener's hostname (SNI); its routes serve only requests
//! that came over TLS, the HTTP listener's only clear-text ones
//! (fixture `gateway_https/`).

use crate::support::{Gateway, INFRA, Request, TestCertificate, Vars, pod, serve_gateway};

const HOST: &str = "secure.example.com";
/// The subject of the certificate hawser generates when none is configured.
const DEFAULT_CERTIFICATE_CN: &str = "hawser default certificate";

async fn gateway() -> Gateway {
    let cert = TestCertificate::self_signed(HOST);
    let mut vars = Vars::new();
    vars.insert("SECURE_TLS_CRT".to_string(), cert.cert_yaml());
    vars.insert("SECURE_TLS_KEY".to_string(), cert.key_yaml());
    serve_gateway(
        "gateway_https",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(INFRA, "infra-backend-v2", "infra-backend-v2-0"),
        ],
        vars,
    )
    .await
}

#[tokio::test]
async fn the_listener_certificate_is_served_for_its_hostname() {
    let gw = gateway().await;
    let response = gw.get_tls(Some(HOST), HOST, "/").await;
    let tls = response.tls();
    assert_eq!(tls.subject_cn.as_deref(), Some(HOST), "{tls:?}");
    assert_eq!(tls.dns_names, [HOST], "{tls:?}");
    assert_eq!(response.status, 200, "{}", response.text());
    let reply = response.echo();
    assert_eq!(
        (reply.namespace.as_str(), reply.service.as_str()),
        (INFRA, "infra-backend-v1")
    );
}

#[tokio::test]
async fn other_names_get_the_default_certificate_and_no_route() {
    let gw = gateway().await;
    let response = gw
        .get_tls(Some("other.example.com"), "other.example.com", "/")
        .await;
    assert_eq!(
        response.tls().subject_cn.as_deref(),
        Some(DEFAULT_CERTIFICATE_CN)
    );
    assert_eq!(response.status, 404);
}

#[tokio::test]
async fn clear_text_requests_take_the_http_listeners_routes() {
    let gw = gateway().await;
    gw.expect_backend(&Request::get(HOST, "/"), INFRA, "infra-backend-v2")
        .await;
}
