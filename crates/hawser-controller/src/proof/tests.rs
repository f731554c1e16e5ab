#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use hawser_crd::{TestExpectation, TestRequest, ValidationTest};
use hawser_model::ObjectKey;
use hawser_render::{RenderConfig, Renderer, ServerState};

use super::echoes::EchoBackends;
use super::private_haproxy::{private_address, private_config};
use super::rejections::{Rejection, Scope, rejections};
use super::*;

/// web.example.com → shop/web (two endpoints), /docs → shop/docs (ExternalName);
/// shop/idle is used by no route.
const MANIFESTS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: hawser
  annotations: { ingressclass.kubernetes.io/is-default-class: "true" }
spec: { controller: hawser.dev/ingress-controller }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: site, namespace: shop }
spec:
  rules:
    - host: web.example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: { service: { name: web, port: { number: 80 } } }
          - path: /docs
            pathType: Exact
            backend: { service: { name: docs, port: { name: https } } }
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: shop }
spec: { ports: [{ name: http, port: 80 }, { name: admin, port: 9000 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: web-1, namespace: shop, labels: { kubernetes.io/service-name: web } }
addressType: IPv4
ports: [{ name: http, port: 8080 }]
endpoints: [{ addresses: ["10.0.0.1"] }, { addresses: ["10.0.0.2"] }]
---
apiVersion: v1
kind: Service
metadata: { name: docs, namespace: shop }
spec: { type: ExternalName, externalName: docs.example.org, ports: [{ name: https, port: 443 }] }
---
apiVersion: v1
kind: Service
metadata: { name: idle, namespace: shop }
spec: { ports: [{ name: http, port: 80 }] }
"#;

fn store() -> Store {
    crate::test_store::store_of(MANIFESTS)
}

fn test(name: &str, status: Option<u16>, service: Option<&str>) -> ValidationTest {
    ValidationTest {
        name: name.to_string(),
        request: TestRequest {
            host: "web.example.com".to_string(),
            ..TestRequest::default()
        },
        expect: TestExpectation {
            status,
            service: service.map(str::to_string),
        },
    }
}

fn answer(status: u16, service: Option<&str>) -> Result<Answer, String> {
    Ok(Answer {
        status,
        service: service.map(str::to_string),
    })
}

#[tokio::test]
async fn echoes_replace_the_endpoints_of_used_services_and_nothing_else() {
    let store = store();
    let renderer = Renderer::new(RenderConfig::default()).unwrap();
    let original = renderer.render(&store).unwrap();
    let echoes = EchoBackends::start(&store, &original.plan).await.unwrap();
    let served = echoes.substitute(&store);
    let substituted = renderer.render(&served).unwrap();

    assert_eq!(
        substituted.plan.maps, original.plan.maps,
        "routes unchanged"
    );
    let names = |plan: &hawser_render::Plan| {
        plan.backends
            .iter()
            .map(|b| b.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&substituted.plan), names(&original.plan));
    for backend in substituted
        .plan
        .backends
        .iter()
        .filter(|b| !b.role.is_spare())
    {
        assert_eq!(backend.servers.len(), 1, "{backend:?}");
        let server = &backend.servers[0];
        assert_eq!(server.address, "127.0.0.1", "{backend:?}");
        assert!(
            !server.resolve,
            "the ExternalName Service is served locally"
        );
        assert_eq!(server.state, ServerState::Ready);
    }
    // The unused Service gets no echo; its slices stay as they were.
    let idle = ObjectKey::new("shop", "idle");
    assert!(served.endpoint_slices_for(&idle).next().is_none());
    let web = ObjectKey::new("shop", "web");
    assert_eq!(served.endpoint_slices_for(&web).count(), 1);
}

#[test]
fn private_settings_keep_everything_else() {
    let mut config = RenderConfig::default();
    config.settings.http_port = 80;
    config.settings.runtime_socket = Some("/run/haproxy.sock".to_string());
    config.settings.server_state_file = Some("/run/state".to_string());
    config.settings.health_port = Some(8404);
    config.settings.timeouts.server = "3s".to_string();
    let ip = private_address();
    assert!(ip.is_loopback() && ip.octets()[1] >= 128, "{ip}");
    let private = private_config(&config, ip, 20080, 20443);
    let s = &private.settings;
    assert_eq!(
        (s.bind_address.clone(), s.http_port, s.https_port),
        (ip.to_string(), 20080, 20443)
    );
    assert_eq!(
        (&s.runtime_socket, &s.server_state_file, s.health_port),
        (&None, &None, None)
    );
    assert_eq!(s.timeouts.server, "3s");
    private.validate().unwrap();
}

#[test]
fn an_answer_meets_what_is_stated_and_nothing_more() {
    let rejected = [];
    for (expect, got) in [
        (
            test("a", Some(200), Some("shop/web")),
            answer(200, Some("shop/web")),
        ),
        (test("b", Some(404), None), answer(404, None)),
        (
            test("c", None, Some("shop/web")),
            answer(500, Some("shop/web")),
        ),
    ] {
        let outcome = verdict::judge(&expect, got, &rejected);
        assert!(outcome.passed(), "{outcome}");
    }
}

#[test]
fn a_failure_says_what_was_expected_and_what_came_back() {
    let wrong_service = verdict::judge(
        &test("web", Some(200), Some("shop/web")),
        answer(200, Some("shop/api")),
        &[],
    );
    assert_eq!(
        wrong_service.to_string(),
        "test web failed: expected status 200 from Service shop/web, got 200 from Service shop/api"
    );
    let unrouted = verdict::judge(&test("root", Some(200), None), answer(404, None), &[]);
    assert_eq!(
        unrouted.failure.unwrap().to_string(),
        "expected status 200, got 404 from HAProxy itself (no Service answered)"
    );
    let silent = verdict::judge(
        &test("down", None, Some("shop/web")),
        Err("connection refused".to_string()),
        &[],
    );
    assert_eq!(
        silent.failure.unwrap().to_string(),
        "expected an answer from Service shop/web, got no answer: connection refused"
    );
}

#[test]
fn a_failure_lists_what_the_render_rejected() {
    let rejected: Vec<Rejection> = (1..=5)
        .map(|i| Rejection {
            text: format!("Ingress shop/bad-{i}: x"),
            scope: Scope::Every,
        })
        .collect();
    let outcome = verdict::judge(&test("web", Some(200), None), answer(503, None), &rejected);
    let text = outcome.to_string();
    assert!(
        text.ends_with(
            "; the render rejected Ingress shop/bad-1: x; Ingress shop/bad-2: x; Ingress shop/bad-3: x; and 2 more rejected objects"
        ),
        "{text}"
    );
    // A passing test mentions nothing.
    let passed = verdict::judge(&test("ok", Some(503), None), answer(503, None), &rejected);
    assert_eq!(passed.to_string(), "test ok passed");
}

#[test]
fn the_report_names_its_first_failure() {
    let report = TestReport {
        outcomes: vec![
            verdict::judge(&test("one", Some(200), None), answer(200, None), &[]),
            verdict::judge(&test("two", Some(200), None), answer(404, None), &[]),
            verdict::judge(&test("three", Some(200), None), answer(503, None), &[]),
        ],
    };
    assert!(!report.passed());
    assert_eq!(report.summary(), "1 passed, 2 failed");
    let first = report.first_failure().unwrap().to_string();
    assert!(first.starts_with("test two failed: "), "{first}");
    assert!(TestReport::default().passed());
}

#[test]
fn only_an_echo_answer_names_a_service() {
    let echo = br#"{"path":"/","host":"h","method":"GET","proto":"HTTP/1.1","headers":{},"namespace":"shop","ingress":"","service":"web","pod":"p"}"#;
    assert_eq!(probe::answering_service(echo).as_deref(), Some("shop/web"));
    assert_eq!(
        probe::answering_service(b"no route for this host and path"),
        None
    );
}

/// shop/broken is rejected (unknown annotation); Ingress shop/odd is
/// rejected (a space in a path) and routes only odd.example.com and *.wild.example.com.
const REJECTED: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: hawser
  annotations: { ingressclass.kubernetes.io/is-default-class: "true" }
spec: { controller: hawser.dev/ingress-controller }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: odd, namespace: shop }
spec:
  rules:
    - host: odd.example.com
      http:
        paths:
          - { path: "/a b", pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }
    - host: "*.wild.example.com"
      http:
        paths:
          - { path: "/", pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: fine, namespace: shop }
spec:
  rules:
    - host: fine.example.com
      http:
        paths:
          - { path: "/", pathType: Prefix, backend: { service: { name: broken, port: { number: 80 } } } }
---
apiVersion: v1
kind: Service
metadata: { name: broken, namespace: shop, annotations: { hawser.dev/nosuch: "x" } }
spec: { ports: [{ name: http, port: 80 }] }
"#;

#[test]
fn a_failure_names_only_the_rejections_that_may_explain_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("site.yaml"), REJECTED).unwrap();
    let store = hawser_k8s::load_dir(dir.path()).unwrap().store;
    let rendered = Renderer::new(RenderConfig::default())
        .unwrap()
        .render(&store)
        .unwrap();
    let rejected = rejections(&rendered.diagnostics, &store);
    let texts: Vec<&str> = rejected.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(rejected.len(), 2, "{texts:?}");

    let at = |host: &str, expect: Option<&str>| {
        let mut test = test("t", Some(200), expect);
        test.request.host = host.to_string();
        test
    };
    let named = |test: &ValidationTest, answer: Result<Answer, String>| {
        verdict::judge(test, answer, &rejected)
            .failure
            .unwrap()
            .rejected
            .join("; ")
    };
    let odd = named(&at("ODD.example.com:80", None), answer(404, None));
    assert!(odd.starts_with("Ingress shop/odd: "), "{odd}");
    assert!(
        !odd.contains("Service"),
        "a 404 is no Service's doing: {odd}"
    );
    let unserved = named(&at("odd.example.com", None), answer(503, None));
    assert!(
        unserved.contains("; Service shop/broken: "),
        "HAProxy answered 503 itself: {unserved}"
    );
    let wild = named(
        &at("a.wild.example.com", None),
        answer(500, Some("shop/web")),
    );
    assert!(wild.starts_with("Ingress shop/odd: "), "{wild}");
    assert!(!wild.contains("Service"), "{wild}");
    let fine = named(
        &at("fine.example.com", Some("shop/broken")),
        answer(200, Some("shop/web")),
    );
    assert!(fine.starts_with("Service shop/broken: "), "{fine}");
    assert!(!fine.contains("Ingress"), "{fine}");
    let elsewhere = named(
        &at("other.example.com", None),
        answer(404, Some("shop/web")),
    );
    assert_eq!(elsewhere, "");
}
