#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;

use hawser_k8s::FromK8s;
use hawser_model::Store;
use hawser_render::{RenderConfig, generate_default_certificate};
use serde_json::{Value, json};
use tokio::sync::watch;
use tower::ServiceExt as _;

use super::*;
use crate::fleet::Snapshot;

mod limits;
mod policy;
mod reasons;

fn ingress(path: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": { "name": "shop", "namespace": "web" },
        "spec": {
            "ingressClassName": "hawser",
            "rules": [{ "host": "shop.example.com", "http": { "paths": [{
                "path": path, "pathType": "Prefix",
                "backend": { "service": { "name": "shop", "port": { "number": 80 } } }
            }]}}]
        }
    })
}

fn config(snippet: &str) -> Value {
    json!({
        "apiVersion": "hawser.dev/v1alpha1",
        "kind": "HawserConfig",
        "metadata": { "name": "hawser", "namespace": "hawser" },
        "spec": { "templates": { "snippets": { "global-extra": snippet } } }
    })
}

fn admission(object: Value) -> Value {
    let kind = object["kind"].clone();
    let (group, version) = match kind.as_str() {
        Some("Ingress") => ("networking.k8s.io", "v1"),
        _ => ("hawser.dev", "v1alpha1"),
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0b6c2e36-1111-2222-3333-444455556666",
            "kind": { "group": group, "version": version, "kind": kind },
            "resource": { "group": group, "version": version, "resource": "x" },
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": { "username": "someone" },
            "object": object,
            "dryRun": false
        }
    })
}

/// A webhook whose snapshot holds our IngressClass.
fn state() -> WebhookState {
    let class: hawser_model::IngressClass = hawser_model::IngressClass::from_k8s(
        &serde_json::from_value(json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": { "name": "hawser" },
            "spec": { "controller": hawser_render::INGRESS_CONTROLLER }
        }))
        .unwrap(),
    )
    .unwrap();
    let mut store = Store::new();
    store.insert(hawser_model::Object::IngressClass(class));
    let (_tx, snapshots) = watch::channel(Some(Arc::new(Snapshot {
        generation: 1,
        store: Arc::new(store),
        config: Arc::default(),
        rendered: None,
        served: Arc::default(),
        rejected: Arc::default(),
    })));
    WebhookState {
        snapshots,
        config: Arc::new(RenderConfig::default()),
        default_certificate: generate_default_certificate().unwrap(),
        haproxy: None,
    }
}

async fn ask(object: Value) -> Value {
    let state = state();
    let request = axum::http::Request::post("/validate")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(admission(object).to_string()))
        .unwrap();
    let response = router(state).oneshot(request).await.unwrap();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let review: Value = serde_json::from_slice(&body).unwrap();
    review["response"].clone()
}

#[tokio::test]
async fn a_valid_ingress_is_admitted_with_the_renders_warnings() {
    let response = ask(ingress("/shop")).await;
    assert_eq!(response["allowed"], true, "{response:#}");
    assert_eq!(response["uid"], "0b6c2e36-1111-2222-3333-444455556666");
    let warnings = response["warnings"].to_string();
    assert!(
        warnings.contains("web/shop"),
        "the missing Service is a warning: {response:#}"
    );
}

#[tokio::test]
async fn an_injection_attempt_is_denied_naming_the_object() {
    let response = ask(ingress("/shop\n  lua-load /tmp/x.lua")).await;
    assert_eq!(response["allowed"], false, "{response:#}");
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.contains("Ingress web/shop"), "{message}");
}

#[tokio::test]
async fn a_config_that_would_run_code_is_denied_before_anything_runs() {
    let response = ask(config("lua-load /etc/hawser/x.lua")).await;
    assert_eq!(response["allowed"], false, "{response:#}");
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.contains("lua-load"), "{message}");
}

#[tokio::test]
async fn a_config_with_bad_settings_is_denied_naming_the_field() {
    let mut object = config("# fine");
    object["spec"]["settings"] = json!({ "httpPort": 80, "httpsPort": 80 });
    let response = ask(object).await;
    assert_eq!(response["allowed"], false, "{response:#}");
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap()
            .contains("httpPort")
    );
}

#[tokio::test]
async fn a_good_config_is_admitted() {
    let response = ask(config("# tuned by the platform team")).await;
    assert_eq!(response["allowed"], true, "{response:#}");
}

/// The cluster source keeps only the Secrets an Ingress already names, so
/// a new Ingress's basic-auth Secret is admitted with a warning rather than
/// denied as missing; a bad auth value is still denied.
#[tokio::test]
async fn a_basic_auth_secret_the_snapshot_does_not_hold_is_admitted_with_a_warning() {
    let mut candidate = ingress("/shop");
    candidate["metadata"]["annotations"] = json!({
        "hawser.dev/auth-type": "basic",
        "hawser.dev/auth-secret": "users",
    });
    let response = ask(candidate.clone()).await;
    assert_eq!(response["allowed"], true, "{response:#}");
    assert!(
        response["warnings"]
            .to_string()
            .contains("Secret web/users"),
        "{response:#}"
    );
    // The same in the dialects of the controllers users move from.
    for annotations in [
        json!({
            "nginx.ingress.kubernetes.io/auth-type": "basic",
            "nginx.ingress.kubernetes.io/auth-secret": "web/users",
        }),
        json!({
            "haproxy.org/auth-type": "basic-auth",
            "haproxy.org/auth-secret": "users",
        }),
    ] {
        let mut theirs = ingress("/shop");
        theirs["metadata"]["annotations"] = annotations;
        let response = ask(theirs).await;
        assert_eq!(response["allowed"], true, "{response:#}");
    }

    candidate["metadata"]["annotations"]["hawser.dev/auth-type"] = json!("digest");
    let response = ask(candidate).await;
    assert_eq!(response["allowed"], false, "{response:#}");
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.contains("hawser.dev/auth-type"), "{message}");
}
