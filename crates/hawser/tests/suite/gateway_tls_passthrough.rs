//! Gateway API: a TLS listener in Passthrough mode hands each connection,
//! still encrypted, to the backend of the TLSRoute that takes its SNI name
//! (the most specific name first); names no TLSRoute takes are terminated
//! by HAProxy on the same port for the HTTPS listener, with the client's
//! address kept; the HTTPS port moves behind the passthrough frontend and
//! back by reload (fixture `gateway_tls_passthrough/`).

use crate::support::{Gateway, INFRA, Response, TestCertificate, Vars, pod, serve_gateway};

const DB: &str = "db.passthrough.example.com";
const ANY: &str = "any.passthrough.example.com";
const SECURE: &str = "secure.example.com";

async fn gateway() -> Gateway {
    let secure = TestCertificate::self_signed(SECURE);
    let mut vars = Vars::new();
    vars.insert("SECURE_TLS_CRT".to_string(), secure.cert_yaml());
    vars.insert("SECURE_TLS_KEY".to_string(), secure.key_yaml());
    serve_gateway(
        "gateway_tls_passthrough",
        &[
            pod(INFRA, "infra-backend-v1", "infra-backend-v1-0"),
            pod(INFRA, "tls-backend", "tls-backend-0").with_tls(&TestCertificate::self_signed(DB)),
            pod(INFRA, "tls-backend-any", "tls-backend-any-0")
                .with_tls(&TestCertificate::self_signed(ANY)),
        ],
        vars,
    )
    .await
}

/// The answer came from `service`, over TLS with the certificate for `cn`.
fn expect_answered(response: &Response, cn: &str, service: &str) {
    assert_eq!(
        response.tls().subject_cn.as_deref(),
        Some(cn),
        "{:?}",
        response.tls()
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let reply = response.echo();
    assert_eq!(
        (reply.namespace.as_str(), reply.service.as_str()),
        (INFRA, service)
    );
}

#[tokio::test]
async fn a_tls_route_passes_the_connection_through_to_its_backend() {
    let gw = gateway().await;
    let response = gw.get_tls(Some(DB), DB, "/").await;
    // The backend's own certificate: HAProxy did not terminate TLS.
    expect_answered(&response, DB, "tls-backend");
    // Nor did it read the request: no header of its own was added.
    let reply = response.echo();
    assert!(
        !reply.headers.contains_key("x-forwarded-proto"),
        "{reply:?}"
    );
}

#[tokio::test]
async fn a_wildcard_route_takes_the_other_names_under_it() {
    let gw = gateway().await;
    let host = "other.passthrough.example.com";
    expect_answered(
        &gw.get_tls(Some(host), host, "/").await,
        ANY,
        "tls-backend-any",
    );
}

#[tokio::test]
async fn other_names_are_terminated_on_the_same_port_with_the_client_address() {
    let gw = gateway().await;
    let response = gw.get_tls(Some(SECURE), SECURE, "/").await;
    expect_answered(&response, SECURE, "infra-backend-v1");
    let reply = response.echo();
    assert_eq!(reply.headers["x-forwarded-proto"], ["https"], "{reply:?}");
    // The PROXY header carried the client's address past the socket.
    assert_eq!(reply.headers["x-forwarded-for"], ["127.0.0.1"], "{reply:?}");
}

#[tokio::test]
async fn a_client_without_sni_is_terminated_too() {
    let gw = gateway().await;
    let response = gw.get_tls(None, SECURE, "/").await;
    assert_ne!(response.tls().subject_cn.as_deref(), Some(DB));
    assert_ne!(response.tls().subject_cn.as_deref(), Some(ANY));
}

#[tokio::test]
async fn the_https_port_moves_behind_the_passthrough_frontend_and_back_by_reload() {
    let gw = gateway().await;
    let gateway_yaml = std::fs::read_to_string(gw.manifests().join("gateway.yaml")).unwrap();
    let (head, https) = gateway_yaml
        .split_once("    - name: tls\n")
        .expect("the tls listener");
    let (_, https) = https
        .split_once("    - name: https\n")
        .expect("the https listener");
    let without_tls = format!("{head}    - name: https\n{https}");

    let before = gw.desired_generation().await;
    gw.write_manifest("gateway.yaml", &without_tls);
    gw.expect_outcome_after(before, "reload").await;
    let response = gw.get_tls(Some(DB), DB, "/").await;
    assert_ne!(
        response.tls().subject_cn.as_deref(),
        Some(DB),
        "still passed through"
    );
    expect_answered(
        &gw.get_tls(Some(SECURE), SECURE, "/").await,
        SECURE,
        "infra-backend-v1",
    );

    let before = gw.desired_generation().await;
    gw.write_manifest("gateway.yaml", &gateway_yaml);
    gw.expect_outcome_after(before, "reload").await;
    expect_answered(&gw.get_tls(Some(DB), DB, "/").await, DB, "tls-backend");
    expect_answered(
        &gw.get_tls(Some(SECURE), SECURE, "/").await,
        SECURE,
        "infra-backend-v1",
    );
}
