#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use super::*;
use crate::config::Settings;

fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (format!("hawser.dev/{k}"), v.to_string()))
        .collect()
}

#[test]
fn defaults_redirect_and_send_hsts_on_tls_hosts() {
    let features = ingress_features(&BTreeMap::new(), &Settings::default()).unwrap();
    assert_eq!(features.https_redirect, Some(308));
    assert_eq!(
        features.hsts.as_deref(),
        Some("max-age=31536000; includeSubDomains")
    );
    assert_eq!(
        features.set_id("app/web", true).as_deref(),
        Some("app/web:tls")
    );
    assert_eq!(features.set_id("app/web", false), None);

    let settings = Settings {
        ssl_redirect: false,
        hsts: false,
        ..Settings::default()
    };
    let features = ingress_features(&BTreeMap::new(), &settings).unwrap();
    assert_eq!(features, IngressFeatures::default());
}

#[test]
fn annotations_set_each_feature() {
    let features = ingress_features(
        &annotations(&[
            ("ssl-redirect-code", "301"),
            ("hsts-max-age", "60"),
            ("hsts-include-subdomains", "false"),
            ("hsts-preload", "true"),
            ("allowlist-source-range", "10.0.0.0/8, 127.0.0.1"),
            ("denylist-source-range", "10.1.0.0/16"),
            ("temporal-redirect", "https://example.com/moved"),
            ("app-root", "/app"),
        ]),
        &Settings::default(),
    )
    .unwrap();
    assert_eq!(features.https_redirect, Some(301));
    assert_eq!(features.hsts.as_deref(), Some("max-age=60; preload"));
    assert_eq!(features.allow.len(), 2);
    assert_eq!(features.deny[0].to_string(), "10.1.0.0/16");
    assert_eq!(
        features.redirect,
        Some(Redirect {
            code: 302,
            location: "https://example.com/moved".to_string()
        })
    );
    assert_eq!(features.app_root.as_deref(), Some("/app"));
    assert_eq!(features.set_id("a/b", false).as_deref(), Some("a/b"));
}

#[test]
fn a_bad_value_names_the_annotation_the_value_and_what_is_expected() {
    let cases = [
        (
            ("ssl-redirect", "yes"),
            r#"annotation hawser.dev/ssl-redirect: "yes" is not true or false"#,
        ),
        (
            ("ssl-redirect-code", "200"),
            r#"annotation hawser.dev/ssl-redirect-code: "200" is not one of 301, 302, 303, 307, 308"#,
        ),
        (
            ("allowlist-source-range", "10.0.0.0/8\nbind :1"),
            "annotation hawser.dev/allowlist-source-range: \"10.0.0.0/8\\nbind :1\" is not a comma-separated list",
        ),
        (
            ("permanent-redirect", "/relative"),
            r#"annotation hawser.dev/permanent-redirect: "/relative" is not an absolute http:// or https:// URL"#,
        ),
        (
            ("balancer", "leastconn"),
            "annotation hawser.dev/balancer is not one hawser knows",
        ),
        (
            ("auth-url", "https://auth.example.com/"),
            r#"annotation hawser.dev/auth-url: "https://auth.example.com/" is not an http:// or https:// URL naming a Service"#,
        ),
    ];
    for ((name, value), expected) in cases {
        let error = ingress_features(&annotations(&[(name, value)]), &Settings::default())
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(expected), "{error}");
    }
    let both = ingress_features(
        &annotations(&[
            ("permanent-redirect", "https://a.example/"),
            ("temporal-redirect", "https://b.example/"),
        ]),
        &Settings::default(),
    );
    assert!(both.is_err());
}

#[test]
fn tls_hosts_match_exactly_or_by_one_wildcard_label() {
    let tls = hawser_model::Ingress {
        key: hawser_model::ObjectKey::new("app", "web"),
        created: None,
        class_name: None,
        annotations: BTreeMap::new(),
        default_backend: None,
        tls: vec![hawser_model::IngressTls {
            hosts: vec![
                "a.example.com".to_string(),
                "*.apps.example.com".to_string(),
            ],
            secret_name: None,
        }],
        rules: Vec::new(),
    };
    assert!(is_tls_host("a.example.com", &tls));
    assert!(is_tls_host("x.apps.example.com", &tls));
    assert!(!is_tls_host("x.y.apps.example.com", &tls));
    assert!(!is_tls_host("b.example.com", &tls));
    assert!(!is_tls_host("", &tls));
}

#[test]
fn feature_maps_hold_every_value_by_feature_set() {
    let mut by_ingress = FeaturesByIngress::new();
    by_ingress.insert(
        "app/web".to_string(),
        ingress_features(
            &annotations(&[
                ("allowlist-source-range", "10.0.0.0/8"),
                ("app-root", "/home"),
            ]),
            &Settings::default(),
        )
        .unwrap(),
    );
    let (maps, view) = feature_maps(&by_ingress, &Settings::default());
    let entries = |path: &str| -> Vec<(String, String)> {
        maps.iter()
            .find(|m| m.path == path)
            .unwrap()
            .entries
            .iter()
            .map(|e| (e.key.to_string(), e.value.to_string()))
            .collect()
    };
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(
        entries("maps/https_redirect.map"),
        [pair("app/web:tls", "308")]
    );
    assert_eq!(
        entries("maps/app_root.map"),
        [pair("app/web", "/home"), pair("app/web:tls", "/home")]
    );
    assert_eq!(
        entries("maps/allow_app_web.map"),
        [pair("10.0.0.0/8", "allow")]
    );
    assert_eq!(view.access.len(), 1);
    assert_eq!(view.access[0].ids, ["app/web", "app/web:tls"]);
    assert_eq!(view.access[0].deny, None);
}

#[test]
fn settings_name_the_defaults_and_the_foreign_policy() {
    let settings: Settings = serde_json::from_value(serde_json::json!({
        "sslRedirect": false,
        "hsts": false,
        "foreignAnnotations": "warn",
    }))
    .unwrap();
    assert!(!settings.ssl_redirect && !settings.hsts);
    assert_eq!(settings.foreign_annotations, ForeignAnnotations::Warn);
    let refused = serde_json::from_value::<Settings>(serde_json::json!({
        "foreignAnnotations": "allow",
    }));
    assert!(refused.is_err());
}

#[test]
fn header_lines_are_typed_and_reserved_names_refused() {
    let features = ingress_features(
        &annotations(&[
            ("request-headers", "X-Team: payments\nX-Env:  prod "),
            ("response-headers", "Cache-Control: no-store"),
        ]),
        &Settings::default(),
    )
    .unwrap();
    assert_eq!(features.request_headers["x-team"], "payments");
    assert_eq!(features.request_headers["x-env"], "prod");
    assert_eq!(features.response_headers["cache-control"], "no-store");
    for bad in [
        "Host: evil.example.com",
        "Transfer-Encoding: chunked",
        "X-A value",
        "X A: b",
        "X-A: b\u{7}",
        "X-A: one\nX-A: two",
    ] {
        let error = ingress_features(
            &annotations(&[("request-headers", bad)]),
            &Settings::default(),
        );
        assert!(error.is_err(), "{bad:?}");
    }
}

#[test]
fn each_header_name_has_a_map_of_its_values() {
    let mut by_ingress = FeaturesByIngress::new();
    for (key, value) in [
        ("a/one", "X-Team: one"),
        ("b/two", "X-Team: two\nX-Tier: gold"),
    ] {
        by_ingress.insert(
            key.to_string(),
            ingress_features(
                &annotations(&[("request-headers", value)]),
                &Settings {
                    ssl_redirect: false,
                    hsts: false,
                    ..Settings::default()
                },
            )
            .unwrap(),
        );
    }
    let (maps, view) = feature_maps(&by_ingress, &Settings::default());
    let names: Vec<&str> = view
        .request_headers
        .iter()
        .map(|h| h.name.as_str())
        .collect();
    assert_eq!(names, ["x-team", "x-tier"]);
    let team = maps
        .iter()
        .find(|m| m.path == "maps/request_header_x-team.map")
        .unwrap();
    let entries: Vec<(&str, &str)> = team.entries.iter().map(|e| (&*e.key, &*e.value)).collect();
    assert_eq!(entries, [("a/one", "one"), ("b/two", "two")]);
}

#[test]
fn backend_annotations_on_an_ingress_are_checked_there() {
    assert!(
        ingress_features(
            &annotations(&[("backend-protocol", "HTTPS")]),
            &Settings::default()
        )
        .is_ok()
    );
    let error = ingress_features(
        &annotations(&[("backend-protocol", "FTP")]),
        &Settings::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with("annotation hawser.dev/backend-protocol: \"FTP\""),
        "{error}"
    );
}

#[test]
fn body_sizes_read_as_ingress_nginx_writes_them() {
    assert_eq!(body_size("8m"), Ok(Some(8 << 20)));
    assert_eq!(body_size("512K"), Ok(Some(512 << 10)));
    assert_eq!(body_size("1g"), Ok(Some(1 << 30)));
    assert_eq!(body_size("1000"), Ok(Some(1000)));
    assert_eq!(body_size("0"), Ok(None));
    for bad in ["", "m", "1.5m", "-1", "8mb", "99999999999999g"] {
        assert!(body_size(bad).is_err(), "{bad:?}");
    }
    let settings = Settings {
        body_size_limit: Some("1m".to_string()),
        ..Settings::default()
    };
    let features = ingress_features(&BTreeMap::new(), &settings).unwrap();
    assert_eq!(features.body_size, Some(1 << 20), "the setting's default");
    let features = ingress_features(&annotations(&[("proxy-body-size", "0")]), &settings).unwrap();
    assert_eq!(features.body_size, None, "0 lifts it");
}

#[test]
fn trusted_sources_are_networks_written_as_given() {
    use crate::config::RenderConfig;
    let config = |sources: &[&str]| RenderConfig {
        settings: Settings {
            proxy_protocol: crate::config::ProxyProtocol {
                trusted_sources: sources.iter().map(|s| s.to_string()).collect(),
            },
            ..Settings::default()
        },
        ..RenderConfig::default()
    };
    assert!(config(&["10.0.0.0/8", "2001:db8::/32"]).validate().is_ok());
    for bad in [
        &["10.0.0.0/8\n"][..],
        &["10.0.0.0/8 }"],
        &["10.0.0.0/8,10.1.0.0/16"],
        &["x"],
    ] {
        assert!(config(bad).validate().is_err(), "{bad:?}");
    }
}

#[test]
fn external_auth_is_one_kind_of_auth_and_its_family_needs_it() {
    let features = ingress_features(
        &annotations(&[
            ("auth-url", "http://oauth.auth.svc/check"),
            ("auth-signin", "https://login.example.com/"),
            ("auth-response-headers", "X-User"),
        ]),
        &Settings::default(),
    )
    .unwrap();
    let auth = features.external_auth.unwrap();
    assert_eq!(auth.signin.as_deref(), Some("https://login.example.com/"));
    assert_eq!(auth.response_headers, ["x-user"]);
    let refused = |pairs: &[(&str, &str)]| {
        ingress_features(&annotations(pairs), &Settings::default())
            .unwrap_err()
            .to_string()
    };
    assert!(
        refused(&[
            ("auth-url", "http://oauth/check"),
            ("auth-type", "basic"),
            ("auth-secret", "users"),
        ])
        .contains("cannot both be set")
    );
    assert_eq!(
        refused(&[("auth-signin", "https://login.example.com/")]),
        "annotation hawser.dev/auth-signin needs hawser.dev/auth-url"
    );
}

#[test]
fn external_auth_maps_name_the_backend_and_load_the_lua() {
    let mut auth = ingress_features(
        &annotations(&[("auth-url", "https://oauth.auth.svc:8443/check?x=1")]),
        &Settings::default(),
    )
    .unwrap()
    .external_auth
    .unwrap();
    let store = hawser_model::Store::default();
    let key = auth.backend_key("shop", &store);
    assert_eq!(
        (key.namespace.as_str(), key.service.as_str()),
        ("auth", "oauth")
    );
    assert_eq!(
        key.overrides
            .get(BACKEND_PROTOCOL_ANNOTATION)
            .map(String::as_str),
        Some("HTTPS"),
        "an https:// URL speaks TLS to the pods"
    );
    auth.backend = Some(key.name());
    let features = IngressFeatures {
        external_auth: Some(auth),
        ..IngressFeatures::default()
    };
    let by_ingress = BTreeMap::from([("shop/web".to_string(), features)]);
    let settings = Settings {
        runtime_socket: Some("/run/hawser/admin.sock".to_string()),
        ..Settings::default()
    };
    let (maps, view) = feature_maps(&by_ingress, &settings);
    let view = view.auth.unwrap();
    assert_eq!(view.address, "unix@/run/hawser/auth.sock");
    assert_eq!(view.backends, [key.name()]);
    let entries = |path: &str| -> Vec<(String, String)> {
        maps.iter()
            .find(|m| m.path == path)
            .unwrap()
            .entries
            .iter()
            .map(|e| (e.key.to_string(), e.value.to_string()))
            .collect()
    };
    assert_eq!(
        entries("maps/auth_target.map"),
        [(
            "shop/web".to_string(),
            "oauth.auth.svc:8443/check?x=1".to_string()
        )]
    );
    assert_eq!(
        entries("maps/auth_backend.map"),
        [("shop/web".to_string(), key.name())]
    );
    let (maps, view) = feature_maps(&BTreeMap::new(), &settings);
    assert!(
        view.auth.is_none(),
        "no Lua, no frontend without an Ingress asking"
    );
    assert!(!maps.iter().any(|m| m.path.starts_with("maps/auth_")));
}

#[test]
fn a_canary_takes_a_weight_out_of_its_total_and_names_what_it_goes_by() {
    let canary = ingress_features(
        &annotations(&[
            ("canary", "true"),
            ("canary-by-header", "X-Canary"),
            ("canary-weight", "5"),
            ("canary-weight-total", "10"),
        ]),
        &Settings::default(),
    )
    .unwrap()
    .canary
    .unwrap();
    assert_eq!(canary.header.as_deref(), Some("x-canary"));
    assert_eq!((canary.weight, canary.total), (5, 10));
    let refused = |pairs: &[(&str, &str)]| {
        ingress_features(&annotations(pairs), &Settings::default())
            .unwrap_err()
            .to_string()
    };
    assert!(refused(&[("canary", "true"), ("canary-weight", "101")]).contains("canary-weight"));
    assert!(refused(&[("canary-weight", "10")]).contains("needs hawser.dev/canary"));
    assert!(
        refused(&[("canary", "true"), ("canary-by-header-value", "v2")])
            .contains("needs hawser.dev/canary-by-header")
    );
}
