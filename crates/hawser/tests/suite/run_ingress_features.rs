//! Runtime first: feature values of existing Ingresses change through the
//! runtime API, with no reload (the same HAProxy worker serves before and
//! after): an allow-list edited, a redirect target changed, a rate limit,
//! a header value and CORS changed, app-root, the HTTPS redirect's code and
//! HSTS changed, a deny-list edited, paths turned into regular expressions,
//! and features given to an Ingress that had none (fixture
//! `run_ingress_features/`).

use crate::support;

use support::{Backends, Manifests, Run, pod};

const EDITED: &str = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: gate
  namespace: features
  annotations:
    hawser.dev/allowlist-source-range: "10.0.0.0/8, 127.0.0.0/8"
    hawser.dev/rate-limit-rps: "2"
    hawser.dev/rate-limit-burst: "0"
spec:
  rules:
    - host: gate.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: moved
  namespace: features
  annotations:
    hawser.dev/permanent-redirect: "https://second.example.com/"
spec:
  rules:
    - host: moved.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: plain
  namespace: features
  annotations:
    hawser.dev/temporal-redirect: "https://elsewhere.example.com/"
spec:
  rules:
    - host: plain.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: tuned
  namespace: features
  annotations:
    hawser.dev/rate-limit-rps: "500"
    hawser.dev/request-headers: "X-Team: second"
    hawser.dev/proxy-body-size: "2m"
    hawser.dev/enable-cors: "true"
    hawser.dev/response-headers: "X-Served: second"
    hawser.dev/app-root: /second
spec:
  rules:
    - host: tuned.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: secure
  namespace: features
  annotations:
    hawser.dev/ssl-redirect-code: "307"
    hawser.dev/hsts-max-age: "120"
    hawser.dev/hsts-preload: "true"
spec:
  tls: [{ hosts: [secure.example.com], secretName: secure-tls }]
  rules:
    - host: secure.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: blocked
  namespace: features
  annotations:
    hawser.dev/denylist-source-range: "10.0.0.0/8"
spec:
  rules:
    - host: blocked.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: patterns
  namespace: features
  annotations:
    hawser.dev/use-regex: "true"
spec:
  rules:
    - host: patterns.example.com
      http: { paths: [{ path: "/items/[0-9]+$", pathType: ImplementationSpecific, backend: { service: { name: app, port: { number: 80 } } } }] }
"#;

/// The fixture, its TLS host's certificate included.
fn fixture(backends: &Backends) -> Manifests {
    let cert = support::TestCertificate::self_signed("secure.example.com");
    let mut vars = backends.vars();
    vars.insert("SECURE_TLS_CRT".into(), cert.cert_yaml());
    vars.insert("SECURE_TLS_KEY".into(), cert.key_yaml());
    Manifests::from_fixture("run_ingress_features", &vars)
}

#[tokio::test]
async fn feature_values_change_without_a_reload() {
    let backends = Backends::start(&[pod("features", "app", "app-0")]);
    let manifests = fixture(&backends);
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;

    assert_eq!(run.get("gate.example.com", "/").await.status, 403);
    let moved = run.get("moved.example.com", "/").await;
    assert_eq!(moved.status, 301);
    assert_eq!(moved.header("location"), Some("https://first.example.com/"));
    run.expect_routed_to("plain.example.com", "/", "app").await;
    let tuned = run
        .expect_routed_to("tuned.example.com", "/page", "app")
        .await;
    assert_eq!(
        tuned.headers.get("x-team"),
        Some(&vec!["first".to_string()])
    );
    let answer = run.get("tuned.example.com", "/page").await;
    assert_eq!(answer.header("x-served"), Some("first"));
    assert_eq!(
        run.get("tuned.example.com", "/").await.header("location"),
        Some("/first")
    );
    let insecure = run.get("secure.example.com", "/").await;
    assert_eq!(insecure.status, 301);
    let secure = run
        .get_tls(Some("secure.example.com"), "secure.example.com", "/")
        .await;
    assert_eq!(
        secure.header("strict-transport-security"),
        Some("max-age=60; includeSubDomains")
    );
    assert_eq!(run.get("blocked.example.com", "/").await.status, 403);
    assert_eq!(
        run.get("patterns.example.com", "/items/abc").await.status,
        200
    );
    let workers = run.worker_pids().await;

    let before = run.desired_generation().await;
    run.write_manifest("ingresses.yaml", EDITED);
    run.expect_outcome_after(before, "runtime").await;

    run.expect_routed_to("gate.example.com", "/", "app").await;
    let moved = run.get("moved.example.com", "/").await;
    assert_eq!(
        moved.header("location"),
        Some("https://second.example.com/")
    );
    let plain = run.get("plain.example.com", "/").await;
    assert_eq!(plain.status, 302);
    assert_eq!(
        plain.header("location"),
        Some("https://elsewhere.example.com/")
    );
    let tuned = run
        .expect_routed_to("tuned.example.com", "/page", "app")
        .await;
    assert_eq!(
        tuned.headers.get("x-team"),
        Some(&vec!["second".to_string()])
    );
    let cors = run
        .request(
            &support::Request::get("tuned.example.com", "/page")
                .header("Origin", "https://a.example"),
        )
        .await;
    assert_eq!(cors.header("access-control-allow-origin"), Some("*"));
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(run.get("gate.example.com", "/").await.status);
    }
    assert!(statuses.contains(&429), "the new rate holds: {statuses:?}");
    let answer = run.get("tuned.example.com", "/page").await;
    assert_eq!(answer.header("x-served"), Some("second"));
    assert_eq!(
        run.get("tuned.example.com", "/").await.header("location"),
        Some("/second")
    );
    assert_eq!(run.get("secure.example.com", "/").await.status, 307);
    let secure = run
        .get_tls(Some("secure.example.com"), "secure.example.com", "/")
        .await;
    assert_eq!(
        secure.header("strict-transport-security"),
        Some("max-age=120; includeSubDomains; preload")
    );
    // A deny-list edited, and paths become regular expressions.
    run.expect_routed_to("blocked.example.com", "/", "app")
        .await;
    run.expect_routed_to("patterns.example.com", "/items/42", "app")
        .await;
    assert_eq!(
        run.get("patterns.example.com", "/items/abc").await.status,
        404
    );
    assert_eq!(run.worker_pids().await, workers, "the same worker serves");
}

/// With `proxyProtocol.trustedSources`, a trusted load balancer's PROXY
/// header says who the client is: the allow-list judges that address.
#[tokio::test]
async fn a_trusted_proxy_header_names_the_client_the_allow_list_judges() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let backends = Backends::start(&[pod("features", "app", "app-0")]);
    let manifests = fixture(&backends);
    let run = Run::start_with(
        manifests.path(),
        support::RunOptions {
            config_tail: "  proxyProtocol:\n    trustedSources: [\"127.0.0.0/8\"]\n".to_string(),
            ..support::RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;
    let status_from = |client: &'static str| {
        let http = run.http;
        async move {
            let mut stream = tokio::net::TcpStream::connect(http).await.unwrap();
            let request = format!(
                "PROXY TCP4 {client} {} 40000 {}\r\nGET / HTTP/1.1\r\nHost: gate.example.com\r\nConnection: close\r\n\r\n",
                http.ip(),
                http.port()
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            answer.split(' ').nth(1).unwrap_or_default().to_string()
        }
    };
    assert_eq!(status_from("10.1.2.3").await, "200", "inside 10.0.0.0/8");
    assert_eq!(
        status_from("192.0.2.1").await,
        "403",
        "outside the allow-list"
    );
}
