#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use super::*;
use crate::config::Settings;

fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn read(pairs: &[(&str, &str)], target: Target) -> Result<BTreeMap<String, String>, String> {
    let given = annotations(pairs);
    read_annotations(
        &given,
        target,
        "shop",
        &Dialect::ALL,
        ForeignAnnotations::Refuse,
    )
    .map(|read| read.map.into_owned())
    .map_err(|e| e.to_string())
}

/// The features of an Ingress's annotations, or the message refusing it.
fn features_of(pairs: &[(&str, &str)]) -> Result<super::super::IngressFeatures, String> {
    let given = annotations(pairs);
    let read = read_annotations(
        &given,
        Target::Ingress,
        "shop",
        &Dialect::ALL,
        ForeignAnnotations::Refuse,
    )
    .map_err(|e| e.to_string())?;
    super::super::ingress_features(&read.map, &Settings::default())
        .map_err(|e| read.in_their_words(e.to_string()))
}

#[test]
fn ingress_nginx_annotations_become_hawser_features_with_its_defaults() {
    let features = features_of(&[
        (
            "nginx.ingress.kubernetes.io/whitelist-source-range",
            "10.0.0.0/8",
        ),
        ("nginx.ingress.kubernetes.io/limit-rps", "10"),
        (
            "nginx.ingress.kubernetes.io/permanent-redirect",
            "https://new.example.com/",
        ),
        ("nginx.ingress.kubernetes.io/permanent-redirect-code", "308"),
        ("nginx.ingress.kubernetes.io/x-forwarded-prefix", "/shop"),
        ("nginx.ingress.kubernetes.io/enable-cors", "true"),
    ])
    .unwrap();
    assert_eq!(features.allow[0].to_string(), "10.0.0.0/8");
    assert_eq!(features.rate_limit, Some(10 + 50), "burst: 5 × the rate");
    assert_eq!(features.limit_status, Some(503));
    let redirect = features.redirect.unwrap();
    assert_eq!(redirect.code, 308);
    assert_eq!(features.request_headers["x-forwarded-prefix"], "/shop");
    assert!(
        features.cors.unwrap().credentials,
        "ingress-nginx's default"
    );
}

#[test]
fn haproxytech_annotations_become_hawser_features_with_its_defaults() {
    let features = features_of(&[
        ("haproxy.org/allow-list", "192.168.1.0/24, 192.168.2.100"),
        ("haproxy.org/auth-type", "basic-auth"),
        ("haproxy.org/auth-secret", "shop/users"),
        ("haproxy.org/rate-limit-requests", "20"),
        ("haproxy.org/ssl-redirect", "true"),
        (
            "haproxy.org/request-set-header",
            "X-Team shop\nX-Quoted \"a,b\"",
        ),
        ("haproxy.org/cors-enable", "true"),
        ("haproxy.org/cors-max-age", "1m"),
    ])
    .unwrap();
    assert_eq!(features.allow.len(), 2);
    let auth = features.basic_auth.unwrap();
    assert_eq!(auth.secret, "users");
    assert_eq!(auth.realm, "Protected Content");
    assert_eq!(auth.format, super::super::auth::SecretFormat::Map);
    assert_eq!(features.rate_limit, Some(20), "no burst");
    assert_eq!(features.limit_status, Some(403));
    assert_eq!(features.https_redirect, Some(302));
    assert_eq!(features.request_headers["x-team"], "shop");
    assert_eq!(features.request_headers["x-quoted"], "a,b");
    let cors = features.cors.unwrap();
    assert_eq!((cors.credentials, cors.max_age), (false, 60));
    assert_eq!(cors.methods, "*");
}

#[test]
fn a_bad_value_names_the_annotation_the_user_wrote() {
    let refused =
        features_of(&[("nginx.ingress.kubernetes.io/limit-connections", "many")]).unwrap_err();
    assert!(
        refused.starts_with(
            "annotation nginx.ingress.kubernetes.io/limit-connections: \"many\" is not"
        ),
        "{refused}"
    );
    let refused = features_of(&[("haproxy.org/ssl-redirect-code", "200")]).unwrap_err();
    assert!(
        refused.starts_with("annotation haproxy.org/ssl-redirect-code: \"200\""),
        "{refused}"
    );
    let refused = features_of(&[("nginx.ingress.kubernetes.io/limit-rps", "-1")]).unwrap_err();
    assert!(refused.contains("limit-rps"), "{refused}");
}

#[test]
fn two_dialects_asking_one_feature_differently_refuse_naming_both() {
    let refused = read(
        &[
            ("hawser.dev/allowlist-source-range", "10.0.0.0/8"),
            (
                "nginx.ingress.kubernetes.io/whitelist-source-range",
                "192.168.0.0/16",
            ),
        ],
        Target::Ingress,
    )
    .unwrap_err();
    assert!(
        refused.contains("hawser.dev/allowlist-source-range")
            && refused.contains("nginx.ingress.kubernetes.io/whitelist-source-range"),
        "{refused}"
    );
    let same = read(
        &[
            ("hawser.dev/allowlist-source-range", "10.0.0.0/8"),
            ("haproxy.org/allow-list", "10.0.0.0/8"),
        ],
        Target::Ingress,
    );
    assert!(same.is_ok(), "asking the same is no conflict: {same:?}");
    let headers = read(
        &[
            ("hawser.dev/request-headers", "X-Team: a"),
            ("haproxy.org/request-set-header", "X-Team b"),
        ],
        Target::Ingress,
    )
    .unwrap_err();
    assert!(headers.contains("header x-team"), "{headers}");
}

#[test]
fn what_a_front_end_does_not_serve_falls_to_the_policy() {
    // Every snippet, and every security annotation no front-end serves.
    for key in [
        "nginx.ingress.kubernetes.io/configuration-snippet",
        "nginx.ingress.kubernetes.io/server-snippet",
        "nginx.ingress.kubernetes.io/auth-snippet",
        "nginx.ingress.kubernetes.io/stream-snippet",
        "nginx.ingress.kubernetes.io/modsecurity-snippet",
        "nginx.ingress.kubernetes.io/limit-rpm",
        "nginx.ingress.kubernetes.io/limit-whitelist",
        "nginx.ingress.kubernetes.io/limit-allowlist",
        "nginx.ingress.kubernetes.io/global-rate-limit",
        "nginx.ingress.kubernetes.io/auth-tls-error-page",
        "nginx.ingress.kubernetes.io/auth-tls-match-cn",
        "nginx.ingress.kubernetes.io/auth-cache-key",
        "nginx.ingress.kubernetes.io/enable-global-auth",
        "haproxy.org/backend-config-snippet",
        "haproxy.org/frontend-config-snippet",
        "haproxy.org/rate-limit-whitelist",
        "haproxy.org/client-ca",
        "haproxy.org/client-crt-optional",
        "haproxy.com/backend-config-snippet",
    ] {
        let refused = read(&[(key, "x")], Target::Ingress).unwrap_err();
        assert!(refused.contains(key), "{refused}");
    }
    let given = annotations(&[("nginx.ingress.kubernetes.io/session-cookie-path", "/")]);
    let warned = read_annotations(
        &given,
        Target::Ingress,
        "shop",
        &Dialect::ALL,
        ForeignAnnotations::Refuse,
    )
    .unwrap();
    assert_eq!(warned.warnings.len(), 1, "{:?}", warned.warnings);
    assert!(warned.warnings[0].contains("session-cookie-path"));
}

#[test]
fn a_front_end_switched_off_serves_nothing_of_its_dialect() {
    let given = annotations(&[(
        "nginx.ingress.kubernetes.io/whitelist-source-range",
        "10.0.0.0/8",
    )]);
    let refused = read_annotations(
        &given,
        Target::Ingress,
        "shop",
        &[Dialect::Hawser],
        ForeignAnnotations::Refuse,
    );
    assert!(refused.is_err());
    let given = annotations(&[("hawser.dev/allowlist-source-range", "10.0.0.0/8")]);
    let refused = read_annotations(
        &given,
        Target::Ingress,
        "shop",
        &[Dialect::Nginx],
        ForeignAnnotations::Refuse,
    );
    assert!(refused.is_err(), "hawser's own dialect switched off");
}

#[test]
fn refusals_say_why() {
    for (pairs, expected) in [
        (
            &[(
                "nginx.ingress.kubernetes.io/auth-url",
                "https://$host/oauth2/auth",
            )][..],
            "nginx variables",
        ),
        (
            &[("nginx.ingress.kubernetes.io/auth-secret", "other/users")],
            "another namespace",
        ),
        (
            &[
                ("haproxy.org/rate-limit-requests", "5"),
                ("haproxy.org/rate-limit-period", "10s"),
            ],
            "only 1s is served",
        ),
        (
            &[("haproxy.org/allow-list", "patterns/ips")],
            "pattern files",
        ),
        (
            &[
                ("haproxy.org/cors-enable", "true"),
                (
                    "haproxy.org/cors-allow-origin",
                    "^https://.*\\.example\\.com$",
                ),
            ],
            "regular expression",
        ),
        (
            &[
                ("nginx.ingress.kubernetes.io/auth-tls-secret", "shop/ca"),
                (
                    "nginx.ingress.kubernetes.io/auth-tls-verify-client",
                    "optional_no_ca",
                ),
            ],
            "optional_no_ca",
        ),
    ] {
        let refused = read(pairs, Target::Ingress).unwrap_err();
        assert!(refused.contains(expected), "{pairs:?}: {refused}");
    }
}

#[test]
fn haproxytech_reads_backend_settings_on_services() {
    let map = read(
        &[
            ("haproxy.org/server-ssl", "true"),
            ("haproxy.org/server-ca", "shop/pods-ca"),
            ("haproxy.org/load-balance", "leastconn"),
            ("haproxy.org/cookie-persistence", "srv"),
            ("haproxy.org/timeout-server", "90s"),
            ("haproxy.org/send-proxy-protocol", "proxy-v2"),
        ],
        Target::Service,
    )
    .unwrap();
    let get = |name: &str| map.get(&format!("hawser.dev/{name}")).map(String::as_str);
    assert_eq!(get("backend-protocol"), Some("HTTPS"));
    assert_eq!(get("backend-ca-secret"), Some("pods-ca"));
    assert_eq!(get("balance"), Some("leastconn"));
    assert_eq!(get("affinity"), Some("cookie"));
    assert_eq!(get("session-cookie-name"), Some("srv"));
    assert_eq!(get("timeout-server"), Some("90s"));
    assert_eq!(get("send-proxy-protocol"), Some("v2"));
}

#[test]
fn names_are_replaced_whole() {
    assert_eq!(
        replace_name(
            "annotation hawser.dev/auth-secret and hawser.dev/auth-secret-type",
            "hawser.dev/auth-secret",
            "nginx.ingress.kubernetes.io/auth-secret"
        ),
        "annotation nginx.ingress.kubernetes.io/auth-secret and hawser.dev/auth-secret-type"
    );
}

#[test]
fn ingress_nginx_timeouts_are_seconds_on_the_backend() {
    let map = read(
        &[
            ("nginx.ingress.kubernetes.io/proxy-connect-timeout", "7"),
            ("nginx.ingress.kubernetes.io/proxy-read-timeout", "120"),
        ],
        Target::Ingress,
    )
    .unwrap();
    assert_eq!(map["hawser.dev/timeout-connect"], "7s");
    assert_eq!(map["hawser.dev/timeout-server"], "120s");
}

#[test]
fn ingress_nginx_regexes_hold_for_the_whole_host() {
    for pairs in [
        &[("nginx.ingress.kubernetes.io/use-regex", "true")][..],
        &[("nginx.ingress.kubernetes.io/rewrite-target", "/$1")],
    ] {
        let features = features_of(pairs).unwrap();
        assert!(features.use_regex && features.regex_host_wide, "{pairs:?}");
    }
    let hawser = features_of(&[("hawser.dev/use-regex", "true")]).unwrap();
    assert!(hawser.use_regex && !hawser.regex_host_wide);
}
