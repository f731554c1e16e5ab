//! Gateway API: a listener on a port other than 80 (HTTP) and 443 (HTTPS) is
//! served on that port, by a frontend of its own, with only its own routes;
//! an HTTPS one there terminates TLS with its certificate; it refuses the
//! requests every HTTP frontend refuses
//! (fixture `gateway_listener_ports/`).

use crate::support;

use std::net::SocketAddr;

use support::{Gateway, INFRA, Request, Run, TestCertificate, Vars, pod, serve_gateway};

const HOST: &str = "alt.example.com";

/// The Gateway and the addresses of its two listeners on ports of their own.
async fn gateway() -> (Gateway, SocketAddr, SocketAddr) {
    let (alt, alt_tls) = (Run::spare_address(), Run::spare_address());
    let cert = TestCertificate::self_signed(HOST);
    let mut vars = Vars::new();
    vars.insert("ALT_PORT".to_string(), alt.port().to_string());
    vars.insert("ALT_TLS_PORT".to_string(), alt_tls.port().to_string());
    vars.insert("ALT_TLS_CRT".to_string(), cert.cert_yaml());
    vars.insert("ALT_TLS_KEY".to_string(), cert.key_yaml());
    let gw = serve_gateway(
        "gateway_listener_ports",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(INFRA, "infra-backend-v2", "infra-backend-v2-0"),
            pod(INFRA, "infra-backend-v3", "infra-backend-v3-0"),
        ],
        vars,
    )
    .await;
    (gw, alt, alt_tls)
}

#[tokio::test]
async fn each_port_serves_its_listeners_routes() {
    let (gw, alt, _) = gateway().await;
    gw.expect_backend(&Request::get(HOST, "/"), INFRA, "infra-backend-v1")
        .await;
    let response = gw.get_on(alt, HOST, "/x").await;
    assert_eq!(response.status, 200, "{}", response.text());
    let reply = response.echo();
    assert_eq!(
        (reply.namespace.as_str(), reply.service.as_str()),
        (INFRA, "infra-backend-v2")
    );
    assert_eq!(gw.get_on(alt, "other.example.com", "/").await.status, 404);
}

#[tokio::test]
async fn an_https_listener_on_its_own_port_terminates_tls() {
    let (gw, _, alt_tls) = gateway().await;
    let response = gw.get_tls_on(alt_tls, Some(HOST), HOST, "/").await;
    assert_eq!(response.tls().subject_cn.as_deref(), Some(HOST));
    assert_eq!(response.status, 200, "{}", response.text());
    let reply = response.echo();
    assert_eq!(
        (reply.namespace.as_str(), reply.service.as_str()),
        (INFRA, "infra-backend-v3")
    );
}

#[tokio::test]
async fn a_port_of_its_own_refuses_what_no_route_may_see() {
    let (gw, alt, _) = gateway().await;
    // A "/" in the host would spell another host's key in the gateway map.
    let response = gw.get_on(alt, "alt.example.com/x", "/").await;
    assert_eq!(response.status, 400, "{}", response.text());
    let response = gw.get_on(alt, HOST, "/a/../b").await;
    assert_eq!(response.status, 400, "{}", response.text());
    let response = gw.get_on(alt, HOST, "/a|b").await;
    assert_eq!(response.status, 400, "{}", response.text());
}
