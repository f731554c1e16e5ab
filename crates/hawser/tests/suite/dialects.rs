//! ingress-nginx's and haproxytech's annotations served as their users
//! wrote them, by a real HAProxy: access lists, basic auth with each Secret
//! format, rate limits with each controller's status, redirects, headers,
//! CORS with each controller's defaults, TLS to the pods verified with a CA
//! in either Secret format, stickiness from a Service or an Ingress; two
//! dialects asking one feature differently and snippets are refused
//! (fixture `dialects/`). Requests come from 127.0.0.1.

use crate::support;

use support::{Request, Served, TestCertificate, Vars, pod};

async fn serve_dialects() -> Served {
    let pods_cert = TestCertificate::self_signed("pass.example.com");
    let shop = TestCertificate::self_signed("shop.example.com");
    let mut vars = Vars::new();
    vars.insert("PODS_CA".into(), pods_cert.cert_yaml());
    vars.insert(
        "OTHER_CA".into(),
        TestCertificate::self_signed("pass.example.com").cert_yaml(),
    );
    vars.insert("SHOP_TLS_CRT".into(), shop.cert_yaml());
    vars.insert("SHOP_TLS_KEY".into(), shop.key_yaml());
    let pods = [
        pod("moved", "app", "app-0"),
        pod("moved", "tlsapp", "tlsapp-0").with_tls(&pods_cert),
        pod("moved", "sticky", "sticky-0"),
        pod("moved", "sticky", "sticky-1"),
    ];
    support::serve_with("dialects", &pods, vars).await
}

fn basic(host: &str, credentials: &str) -> Request {
    Request::get(host, "/").header("Authorization", &format!("Basic {credentials}"))
}

/// alice:s3cret and bob:s3cret.
const ALICE: &str = "YWxpY2U6czNjcmV0";
const BOB: &str = "Ym9iOnMzY3JldA==";

#[tokio::test]
async fn access_lists_and_basic_auth_hold_in_either_dialect() {
    let served = serve_dialects().await;
    for host in [
        "nginx-allow.example.com",
        "ht-allow.example.com",
        "ht-deny.example.com",
    ] {
        assert_eq!(served.get(host, "/").await.status, 403, "{host}");
    }
    // ingress-nginx: htpasswd lines (auth-file), one key per user (auth-map).
    let anonymous = served.get("nginx-auth-file.example.com", "/").await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(
        anonymous.header("www-authenticate"),
        Some(r#"Basic realm="Nginx realm""#)
    );
    let alice = served
        .request(&basic("nginx-auth-file.example.com", ALICE))
        .await;
    assert_eq!(alice.status, 200);
    // A CORS preflight carries no credentials: it is answered before
    // authentication, as ingress-nginx answers it.
    let preflight = Request::get("nginx-auth-file.example.com", "/")
        .method("OPTIONS")
        .header("Origin", "https://shop.example.com")
        .header("Access-Control-Request-Method", "PUT");
    assert_eq!(served.request(&preflight).await.status, 204);
    let bob = served
        .request(&basic("nginx-auth-map.example.com", BOB))
        .await;
    assert_eq!(bob.status, 200);
    // haproxytech: one key per user, its realm.
    let anonymous = served.get("ht-auth.example.com", "/").await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(
        anonymous.header("www-authenticate"),
        Some(r#"Basic realm="Protected Content""#)
    );
    assert_eq!(
        served
            .request(&basic("ht-auth.example.com", BOB))
            .await
            .status,
        200
    );
    assert_eq!(
        served
            .request(&basic("ht-auth.example.com", ALICE))
            .await
            .status,
        401,
        "alice is not in that Secret"
    );
}

#[tokio::test]
async fn rate_limits_answer_with_each_controllers_status() {
    let served = serve_dialects().await;
    for (host, over) in [
        ("nginx-limit.example.com", 503),
        ("ht-limit.example.com", 403),
    ] {
        let mut statuses = Vec::new();
        for _ in 0..6 {
            statuses.push(served.get(host, "/").await.status);
        }
        assert!(statuses.contains(&200), "{host}: {statuses:?}");
        assert!(statuses.contains(&over), "{host}: {statuses:?}");
        assert!(!statuses.contains(&429), "{host}: {statuses:?}");
    }
}

#[tokio::test]
async fn redirects_headers_and_cors_as_each_controller_gives_them() {
    let served = serve_dialects().await;
    let moved = served.get("nginx-redirect.example.com", "/").await;
    assert_eq!(moved.status, 308);
    assert_eq!(moved.header("location"), Some("https://new.example.com/"));
    // haproxytech redirects a TLS host with 302 unless it says otherwise.
    let redirected = served.get("shop.example.com", "/cart").await;
    assert_eq!(redirected.status, 302);

    assert!(
        served.config().contains("timeout connect 3s"),
        "ingress-nginx's proxy-connect-timeout, on its backend"
    );
    let prefixed = served.get("nginx-prefix.example.com", "/").await;
    assert_eq!(prefixed.echo().headers["x-forwarded-prefix"], ["/shop"]);
    let headers = served.get("ht-headers.example.com", "/").await;
    assert_eq!(headers.echo().headers["x-team"], ["shop"]);
    assert_eq!(headers.header("cache-control"), Some("no-store,no-cache"));

    let preflight = |host: &str, origin: &str| {
        Request::get(host, "/")
            .method("OPTIONS")
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "PUT")
    };
    let nginx = served
        .request(&preflight(
            "nginx-cors.example.com",
            "https://shop.example.com",
        ))
        .await;
    assert_eq!(nginx.status, 204);
    assert_eq!(
        nginx.header("access-control-allow-origin"),
        Some("https://shop.example.com")
    );
    assert_eq!(
        nginx.header("access-control-allow-credentials"),
        Some("true")
    );
    assert_eq!(nginx.header("access-control-max-age"), Some("1728000"));
    let ht = served
        .request(&preflight("ht-cors.example.com", "https://any.example.org"))
        .await;
    assert_eq!(ht.status, 204);
    assert_eq!(ht.header("access-control-allow-origin"), Some("*"));
    assert_eq!(ht.header("access-control-allow-credentials"), None);
    assert_eq!(ht.header("access-control-allow-methods"), Some("*"));
    assert_eq!(ht.header("access-control-max-age"), Some("5"));
}

#[tokio::test]
async fn pods_are_verified_and_sessions_stick_as_each_controller_asks() {
    let served = serve_dialects().await;
    // TLS to the pods, verified with ca.crt (ingress-nginx) or tls.crt
    // (haproxytech's server-ca); a CA that did not sign them: no server.
    served
        .expect_routed_to("nginx-tls.example.com", "/", "tlsapp")
        .await;
    served
        .expect_routed_to("ht-tls.example.com", "/", "tlsapp")
        .await;
    assert_eq!(
        served.get("nginx-tls-wrong.example.com", "/").await.status,
        503
    );
    // The Service's cookie (haproxytech), and an Ingress's over it
    // (ingress-nginx's).
    for (host, cookie) in [
        ("ht-sticky.example.com", "srv="),
        ("nginx-prefix.example.com", "route="),
    ] {
        let first = served.get(host, "/").await;
        let set = first.header("set-cookie").unwrap_or_default().to_string();
        assert!(set.starts_with(cookie), "{host}: {set:?}");
        let (value, _) = set.split_once(';').unwrap_or((&set, ""));
        let pod = first.echo().pod;
        for _ in 0..4 {
            let again = served
                .request(&Request::get(host, "/").header("Cookie", value))
                .await;
            assert_eq!(again.echo().pod, pod, "{host}");
        }
    }
}

#[tokio::test]
async fn conflicts_and_snippets_are_refused_naming_the_annotations() {
    let served = serve_dialects().await;
    let stderr = &served.render.stderr;
    assert!(
        stderr.contains("rejected: Ingress moved/mixed: annotations hawser.dev/allowlist-source-range and nginx.ingress.kubernetes.io/whitelist-source-range ask"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "rejected: Ingress moved/ht-snippet: annotation haproxy.org/backend-config-snippet"
        ),
        "{stderr}"
    );
    served.expect_no_route("mixed.example.com", "/").await;
    served.expect_no_route("ht-snippet.example.com", "/").await;
    assert!(
        stderr.contains("warning: Ingress moved/nginx-limit: annotation nginx.ingress.kubernetes.io/limit-rps is served with a difference"),
        "{stderr}"
    );
}

#[tokio::test]
async fn hosts_paths_and_aliases_change_as_each_controller_asks() {
    let served = serve_dialects().await;
    let vhost = served.get("nginx-vhost.example.com", "/").await;
    assert_eq!(
        vhost.echo().host,
        "www.internal",
        "ingress-nginx's upstream-vhost"
    );
    let alias = served.get("alias.example.com", "/").await;
    assert_eq!(alias.status, 200, "server-alias");
    assert_eq!(alias.echo().host, "www.internal");
    // An alias never takes a host another Ingress serves.
    assert_eq!(served.get("ht-allow.example.com", "/").await.status, 403);
    assert!(
        served
            .render
            .stderr
            .contains("alias route \"ht-allow.example.com/\" is served by Ingress moved/ht-allow"),
        "{}",
        served.render.stderr
    );

    // from-to-www-redirect, where nobody serves the other name.
    let www = served.get("www.example.org", "/a?b=1").await;
    assert_eq!(www.status, 308);
    assert_eq!(www.header("location"), Some("http://example.org/a?b=1"));
    assert!(
        served
            .render
            .stderr
            .contains("ht-allow.example.com is served by a route; it is not redirected"),
        "{}",
        served.render.stderr
    );

    let rewritten = served
        .get("ht-rewrite.example.com", "/api/items?page=2")
        .await;
    let echo = rewritten.echo();
    assert_eq!(echo.path, "/v2/items?page=2", "haproxytech's path-rewrite");
    assert_eq!(echo.host, "api.internal:8080", "haproxytech's set-host");
    let moved = served.get("ht-moved.example.com", "/cart?id=1").await;
    assert_eq!(moved.status, 302);
    assert_eq!(
        moved.header("location"),
        Some("http://new.example.com:8443/cart?id=1")
    );
}

#[tokio::test]
async fn ingress_nginx_regex_paths_hold_for_the_whole_host() {
    let served = serve_dialects().await;
    assert_eq!(
        served.get("regex.example.com", "/items/12").await.status,
        200
    );
    assert_eq!(
        served.get("regex.example.com", "/items/x").await.status,
        404
    );
    // Another Ingress's Prefix path on that host: a regex from the start,
    // as ingress-nginx matches it (so /staticfoo too).
    assert_eq!(
        served.get("regex.example.com", "/static/a").await.status,
        200
    );
    assert_eq!(
        served.get("regex.example.com", "/staticfoo").await.status,
        200
    );
    // rewrite-target alone makes the paths regexes, and rewrites.
    let rewritten = served.get("rewrite.example.com", "/app/cart?id=1").await;
    assert_eq!(rewritten.status, 200, "{}", rewritten.text());
    assert_eq!(rewritten.echo().path, "/cart?id=1");
}
