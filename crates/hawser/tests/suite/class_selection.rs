//! IngressClass selection: hawser serves Ingresses of its classes (by
//! `spec.ingressClassName` or the legacy `kubernetes.io/ingress.class`
//! annotation), and Ingresses naming no class only while one of its classes
//! is marked default; other controllers' Ingresses are left alone (fixture
//! `class_selection/`).

use crate::support;

use support::{Served, Vars, pod};

/// Serves the fixture with hawser's IngressClass default or not.
async fn serve_classes(hawser_is_default: bool) -> Served {
    let vars = Vars::from([(
        "HAWSER_IS_DEFAULT".to_string(),
        hawser_is_default.to_string(),
    )]);
    support::serve_with("class_selection", &[pod("classes", "app", "app-0")], vars).await
}

#[tokio::test]
async fn serves_its_class_and_no_class_when_default() {
    let ingress = serve_classes(true).await;
    for served in ["ours", "legacy-ours", "no-class"] {
        ingress
            .expect_routed_to(&format!("{served}.example.com"), "/", "app")
            .await;
    }
    for not_ours in ["other", "legacy-other"] {
        ingress
            .expect_no_route(&format!("{not_ours}.example.com"), "/")
            .await;
    }
    let stderr = &ingress.render.stderr;
    for not_ours in ["other", "legacy-other"] {
        assert!(
            stderr.contains(&format!("ignored: Ingress classes/{not_ours}:")),
            "render should say it ignores {not_ours}:\n{stderr}"
        );
    }
}

#[tokio::test]
async fn ingress_without_class_is_not_served_when_class_is_not_default() {
    let ingress = serve_classes(false).await;
    for served in ["ours", "legacy-ours"] {
        ingress
            .expect_routed_to(&format!("{served}.example.com"), "/", "app")
            .await;
    }
    for not_served in ["no-class", "other", "legacy-other"] {
        ingress
            .expect_no_route(&format!("{not_served}.example.com"), "/")
            .await;
    }
    let stderr = &ingress.render.stderr;
    assert!(
        stderr.contains("ignored: Ingress classes/no-class:"),
        "render should say it ignores no-class:\n{stderr}"
    );
}
