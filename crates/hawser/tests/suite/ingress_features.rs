//! Ingress features (`hawser.dev/*` annotations, docs/annotations.md) served
//! by a real HAProxy: HTTPS redirects with their code, HSTS with its
//! parameters, source allow- and deny-lists, permanent and temporary
//! redirects, app-root; another controller's access control refused, its
//! other annotations reported as ignored; a bad value refuses its Ingress
//! alone, naming the annotation (fixture `ingress_features/`).
//!
//! Requests come from 127.0.0.1 (the loopback source of every connection
//! here), so `127.0.0.0/8` is "this client".

use crate::support;

use support::{Served, TestCertificate, Vars, pod};

async fn serve_features() -> Served {
    serve_features_trusting(&TestCertificate::self_signed("client.example.com")).await
}

/// The fixture, with `client` the one client certificate Ingress
/// `features/mtls` trusts.
async fn serve_features_trusting(client: &TestCertificate) -> Served {
    let mut vars = Vars::new();
    let cert = TestCertificate::self_signed("secure.example.com");
    vars.insert("SECURE_TLS_CRT".into(), cert.cert_yaml());
    vars.insert("SECURE_TLS_KEY".into(), cert.key_yaml());
    let mtls = TestCertificate::self_signed("mtls.example.com");
    vars.insert("MTLS_TLS_CRT".into(), mtls.cert_yaml());
    vars.insert("MTLS_TLS_KEY".into(), mtls.key_yaml());
    vars.insert("CLIENTS_CA".into(), client.cert_yaml());
    let pods = [
        pod("features", "app", "app-0"),
        pod("features", "tlsapp", "tlsapp-0")
            .with_tls(&TestCertificate::self_signed("pass.example.com")),
    ];
    support::serve_with("ingress_features", &pods, vars).await
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
            "rejected: Ingress features/nginx-snippet: annotation nginx.ingress.kubernetes.io/configuration-snippet asks for access control"
        ),
        "{stderr}"
    );
    ingress
        .expect_no_route("nginx-snippet.example.com", "/")
        .await;
    // ingress-nginx's allow-list is served: this client is outside it.
    let outside = ingress.get("nginx-allowlist.example.com", "/").await;
    assert_eq!(outside.status, 403);
    assert!(
        stderr.contains(
            r#"rejected: Ingress features/bad-code: annotation hawser.dev/ssl-redirect-code: "200" is not one of 301, 302, 303, 307, 308"#
        ),
        "{stderr}"
    );
    ingress.expect_no_route("bad-code.example.com", "/").await;

    assert!(
        stderr.contains(
            "warning: Ingress features/migrated: annotation nginx.ingress.kubernetes.io/session-cookie-path is not served by hawser and is ignored"
        ),
        "{stderr}"
    );
    ingress
        .expect_routed_to("migrated.example.com", "/", "app")
        .await;
}

#[tokio::test]
async fn a_burst_over_the_rate_gets_429() {
    let ingress = serve_features().await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(ingress.get("limited.example.com", "/").await.status);
    }
    assert_eq!(&statuses[..2], [200, 200], "{statuses:?}");
    assert!(statuses.contains(&429), "{statuses:?}");
    // Another Ingress's limit is its own: this client is not limited there.
    ingress
        .expect_routed_to("local.example.com", "/", "app")
        .await;
}

#[tokio::test]
async fn a_second_request_in_flight_gets_429() {
    use tokio::io::AsyncWriteExt as _;
    use tokio::net::TcpStream;
    let ingress = serve_features().await;
    // A request whose body never completes stays in flight.
    let hold = || async {
        let mut held = TcpStream::connect(ingress.http).await.unwrap();
        held.write_all(
            b"POST / HTTP/1.1\r\nHost: single.example.com\r\nContent-Length: 100\r\n\r\npartial",
        )
        .await
        .unwrap();
        held
    };
    let mut held = hold().await;
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    while ingress.get("single.example.com", "/").await.status != 429 {
        assert!(tokio::time::Instant::now() < deadline, "never limited");
        // A request that raced the held one may have had it refused: then
        // the held one was answered, and another is held.
        let mut byte = [0u8; 1];
        let answered =
            tokio::time::timeout(std::time::Duration::from_millis(20), held.peek(&mut byte)).await;
        if answered.is_ok() {
            held = hold().await;
        }
    }
    drop(held);
    let deadline = tokio::time::Instant::now() + support::TIMEOUT;
    while ingress.get("single.example.com", "/").await.status != 200 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the limit never lifted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn cors_answers_preflights_and_allowed_origins_only() {
    use support::Request;
    let ingress = serve_features().await;
    let preflight = ingress
        .request(
            &Request::get("api.example.com", "/items")
                .method("OPTIONS")
                .header("Origin", "https://app.example.com")
                .header("Access-Control-Request-Method", "POST"),
        )
        .await;
    assert_eq!(preflight.status, 204, "{}", preflight.text());
    for (name, value) in [
        ("access-control-allow-origin", "https://app.example.com"),
        ("access-control-allow-methods", "GET, POST"),
        ("access-control-max-age", "600"),
        ("vary", "Origin"),
    ] {
        assert_eq!(preflight.header(name), Some(value), "{name}");
    }
    assert_eq!(preflight.header("access-control-allow-credentials"), None);

    let simple = ingress
        .request(
            &Request::get("api.example.com", "/items").header("Origin", "http://localhost:8080"),
        )
        .await;
    assert_eq!(simple.status, 200);
    assert_eq!(simple.echo().service, "app");
    assert_eq!(
        simple.header("access-control-allow-origin"),
        Some("http://localhost:8080")
    );
    assert_eq!(
        simple.header("access-control-expose-headers"),
        Some("X-Total")
    );

    let foreign = ingress
        .request(
            &Request::get("api.example.com", "/items").header("Origin", "https://evil.example.com"),
        )
        .await;
    assert_eq!(foreign.status, 200);
    assert_eq!(foreign.header("access-control-allow-origin"), None);

    let any = ingress
        .request(
            &Request::get("public-api.example.com", "/").header("Origin", "https://anyone.example"),
        )
        .await;
    assert_eq!(any.header("access-control-allow-origin"), Some("*"));
    assert_eq!(any.header("access-control-allow-credentials"), Some("true"));
}

#[tokio::test]
async fn headers_are_set_on_the_request_and_the_answer() {
    let ingress = serve_features().await;
    let response = ingress.get("headed.example.com", "/").await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("cache-control"), Some("no-store"));
    let reply = response.echo();
    assert_eq!(
        reply.headers.get("x-team"),
        Some(&vec!["payments".to_string()])
    );
    assert_eq!(reply.headers.get("x-env"), Some(&vec!["prod".to_string()]));
    // Only on that Ingress's routes.
    let other = ingress.get("local.example.com", "/").await;
    assert_eq!(other.header("cache-control"), None);
    assert_eq!(other.echo().headers.get("x-team"), None);
}

/// `hawser status` shows what each served Ingress asks of its routes.
#[tokio::test]
async fn status_shows_the_effective_features_of_each_ingress() {
    let ingress = serve_features().await;
    let mut command = support::hawser_command(["status"]);
    command.arg("--manifests").arg(ingress.manifests.path());
    let run = support::run_to_end(&mut command);
    for expected in [
        "  served features/members\n    allows only 10.0.0.0/8, 192.168.0.0/16\n",
        "  served features/secure\n    HTTPS redirect (301) on its TLS hosts\n    Strict-Transport-Security: max-age=600; includeSubDomains; preload on its TLS hosts\n",
        "  served features/limited\n    2 requests a second per client\n",
        "  rejected features/bad-code: annotation hawser.dev/ssl-redirect-code",
    ] {
        assert!(
            run.stdout.contains(expected),
            "{expected:?} in:\n{}",
            run.stdout
        );
    }
    // An Ingress with no TLS host gets neither redirect nor HSTS by default.
    assert!(
        run.stdout.contains("  served features/migrated\n  "),
        "{}",
        run.stdout
    );

    let mut command = support::hawser_command(["status", "--output", "json"]);
    command.arg("--manifests").arg(ingress.manifests.path());
    let json: serde_json::Value =
        serde_json::from_str(&support::run_to_end(&mut command).stdout).unwrap();
    let rooted = json["ingresses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "rooted")
        .unwrap();
    assert_eq!(
        rooted["features"],
        serde_json::json!(["/ redirected (302) to /app/"])
    );
}

#[tokio::test]
async fn basic_auth_accepts_bcrypt_and_sha_crypt_users_and_refuses_the_rest() {
    use support::Request;
    let ingress = serve_features().await;
    let anonymous = ingress.get("private.example.com", "/").await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(
        anonymous.header("www-authenticate"),
        Some(r#"Basic realm="Staff only""#)
    );
    for (who, credentials) in [
        ("alice (SHA-512-crypt)", "YWxpY2U6czNjcmV0"),
        ("bob (bcrypt)", "Ym9iOnMzY3JldA=="),
        ("carol (SHA-256-crypt)", "Y2Fyb2w6aHVudGVyMg=="),
    ] {
        let response = ingress
            .request(
                &Request::get("private.example.com", "/")
                    .header("Authorization", &format!("Basic {credentials}")),
            )
            .await;
        assert_eq!(response.status, 200, "{who}: {}", response.text());
        assert_eq!(response.echo().service, "app");
    }
    let wrong = ingress
        .request(
            &Request::get("private.example.com", "/")
                .header("Authorization", "Basic YWxpY2U6d3Jvbmc="),
        )
        .await;
    assert_eq!(wrong.status, 401, "a wrong password");

    let stderr = &ingress.render.stderr;
    assert!(
        stderr.contains("rejected: Ingress features/private-broken: annotation hawser.dev/auth-secret: Secret features/nobody: it does not exist"),
        "{stderr}"
    );
    ingress
        .expect_no_route("private-broken.example.com", "/")
        .await;
}

#[tokio::test]
async fn a_body_above_the_limit_gets_413() {
    use tokio::io::AsyncWriteExt as _;
    let ingress = serve_features().await;
    let http = ingress.http;
    let post = |size: usize| async move {
        let mut stream = tokio::net::TcpStream::connect(http).await.unwrap();
        let head = format!(
            "POST /upload HTTP/1.1\r\nHost: small.example.com\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&vec![b'x'; size]).await.unwrap();
        let mut buffer = Vec::new();
        support::read_response(&mut stream, &mut buffer)
            .await
            .unwrap()
            .expect("an answer")
    };
    assert_eq!(post(2048).await.status, 413, "above 1k");
    let small = post(512).await;
    assert_eq!(small.status, 200);
    assert_eq!(small.echo().service, "app");
}

#[tokio::test]
async fn regex_paths_and_rewrites_as_ingress_nginx_serves_them() {
    let ingress = serve_features().await;
    let reply = ingress
        .expect_routed_to("rewrite.example.com", "/api/items?page=2", "app")
        .await;
    assert_eq!(
        reply.path, "/items?page=2",
        "the second capture, query kept"
    );
    let reply = ingress
        .expect_routed_to("rewrite.example.com", "/API", "app")
        .await;
    assert_eq!(reply.path, "/", "case-insensitive, from the start");
    ingress
        .expect_no_route("rewrite.example.com", "/other/api")
        .await;

    let reply = ingress
        .expect_routed_to("renamed.example.com", "/old/page", "app")
        .await;
    assert_eq!(reply.path, "/new", "the whole path is replaced");

    let stderr = &ingress.render.stderr;
    assert!(
        stderr.contains(r#"rejected: Ingress features/bad-regex: path regex "/a(b""#),
        "{stderr}"
    );
}

#[tokio::test]
async fn client_certificates_are_required_verified_and_passed_on() {
    let client = TestCertificate::self_signed("client.example.com");
    let ingress = serve_features_trusting(&client).await;
    let host = "mtls.example.com";

    let without = ingress.get_tls(Some(host), host, "/").await;
    assert_eq!(without.status, 400, "no certificate: {}", without.text());

    let with = ingress
        .get_tls_as(host, "/", (&client.cert_pem, &client.key_pem))
        .await
        .expect("a trusted client certificate is accepted");
    assert_eq!(with.status, 200, "{}", with.text());
    let passed = with.echo().headers.get("ssl-client-cert").cloned();
    assert!(
        passed.is_some_and(|values| values.len() == 1 && !values[0].is_empty()),
        "the certificate is passed on"
    );

    // A certificate the CA did not issue: the handshake or the request fails.
    let stranger = TestCertificate::self_signed("client.example.com");
    match ingress
        .get_tls_as(host, "/", (&stranger.cert_pem, &stranger.key_pem))
        .await
    {
        Ok(response) => assert_ne!(response.status, 200, "{}", response.text()),
        Err(_handshake_refused) => {}
    }
    // Other TLS hosts ask for no certificate.
    let other = ingress
        .get_tls(Some("secure.example.com"), "secure.example.com", "/")
        .await;
    assert_eq!(other.status, 200);
}

/// `ssl-passthrough`: the pod's own certificate answers for the host, and
/// its TLS carries the request; other TLS hosts still end at HAProxy.
#[tokio::test]
async fn a_passthrough_host_reaches_the_pod_with_its_own_tls() {
    let ingress = serve_features().await;
    let through = ingress
        .get_tls(Some("pass.example.com"), "pass.example.com", "/inside")
        .await;
    assert_eq!(
        through.tls().subject_cn.as_deref(),
        Some("pass.example.com"),
        "the pod's certificate"
    );
    assert_eq!(through.status, 200, "{}", through.text());
    let reply = through.echo();
    assert_eq!(reply.service, "tlsapp");
    assert_eq!(reply.path, "/inside");

    let terminated = ingress
        .get_tls(Some("secure.example.com"), "secure.example.com", "/")
        .await;
    assert_eq!(
        terminated.tls().subject_cn.as_deref(),
        Some("secure.example.com")
    );
    assert_eq!(terminated.echo().service, "app");
}

/// Backend annotations on an Ingress give it a backend of its own: the same
/// Service port is spoken to over TLS for one Ingress and not for another.
#[tokio::test]
async fn an_ingress_asking_other_backend_settings_gets_its_own_backend() {
    let ingress = serve_features().await;
    let reply = ingress
        .expect_routed_to("upstream-tls.example.com", "/", "tlsapp")
        .await;
    assert_eq!(reply.path, "/");
    let plain = ingress.get("upstream-plain.example.com", "/").await;
    assert_ne!(
        plain.status,
        200,
        "plain HTTP to a TLS pod: {}",
        plain.text()
    );
    let config = ingress.config();
    let backends: Vec<&str> = config
        .lines()
        .filter(|l| l.starts_with("backend be_features_tlsapp_443") && !l.contains("_tcp"))
        .collect();
    assert_eq!(
        backends.len(),
        2,
        "the Service's backend and the Ingress's own: {backends:?}"
    );
}
