//! Service backend features (`hawser.dev/backend-protocol`, `backend-sni`,
//! `affinity`) against real pods: HTTPS and h2c to the pods, sticky
//! sessions; and servers added at runtime carry the same keywords, so a pod
//! that arrives without a reload is spoken to the same way and keeps its
//! sessions (fixture `run_backend_features/`).

use crate::support;

use support::{Backends, Manifests, Run, TestCertificate, pod};

/// The EndpointSlice of Service `service` with `pods`, on port `port_name`.
fn slice(backends: &Backends, service: &str, port_name: &str, pods: &[&str]) -> String {
    let mut endpoints = String::new();
    let mut port = 0;
    for name in pods {
        let echo = backends.pod(name);
        port = echo.addr.port();
        endpoints.push_str(&format!(
            "  - addresses: [\"{}\"]\n    conditions: {{ ready: true }}\n    targetRef: {{ kind: Pod, name: {name} }}\n",
            echo.addr.ip()
        ));
    }
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {service}-1\n  namespace: backends\n  \
         labels: {{ kubernetes.io/service-name: {service} }}\naddressType: IPv4\n\
         ports: [{{ name: {port_name}, port: {port} }}]\nendpoints:\n{endpoints}"
    )
}

/// The name hawser gives the server of an echo pod.
fn server_of(backends: &Backends, pod: &str) -> String {
    let addr = backends.pod(pod).addr;
    format!("ep_{}_{}", addr.ip(), addr.port())
}

#[tokio::test]
async fn pods_are_spoken_to_as_their_service_asks_however_they_arrive() {
    let cert = TestCertificate::self_signed("secure.internal");
    let backends = Backends::start(&[
        pod("backends", "secure", "secure-a").with_tls(&cert),
        pod("backends", "secure", "secure-b").with_tls(&cert),
        pod("backends", "sticky", "sticky-a"),
        pod("backends", "sticky", "sticky-b"),
        pod("backends", "sticky", "sticky-c"),
        pod("backends", "h2", "h2-a"),
    ]);
    let mut vars = backends.vars();
    vars.insert("PODS_CA".into(), cert.cert_yaml());
    vars.insert(
        "OTHER_CA".into(),
        TestCertificate::self_signed("secure.internal").cert_yaml(),
    );
    let manifests = Manifests::from_fixture("run_backend_features", &vars);
    let write =
        |name: &str, text: String| std::fs::write(manifests.path().join(name), text).unwrap();
    write(
        "secure-slice.yaml",
        slice(&backends, "secure", "https", &["secure-a"]),
    );
    write(
        "sticky-slice.yaml",
        slice(&backends, "sticky", "http", &["sticky-a", "sticky-b"]),
    );
    write("h2-slice.yaml", slice(&backends, "h2", "http", &["h2-a"]));
    write(
        "verified-slice.yaml",
        slice(&backends, "verified", "https", &["secure-a"]),
    );
    write(
        "mistrusted-slice.yaml",
        slice(&backends, "mistrusted", "https", &["secure-a"]),
    );
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;

    // HTTPS to the pods: unverified, verified with their CA, and refused
    // with another CA (no server HAProxy trusts: 503).
    run.expect_routed_to("secure.example.com", "/", "secure")
        .await;
    run.expect_routed_to("verified.example.com", "/", "secure")
        .await;
    assert_eq!(run.get("mistrusted.example.com", "/").await.status, 503);
    // The same pods' CA pinned by an Ingress over the Service's own
    // settings; a wrong CA fails that Ingress's backend alone, and a
    // missing Secret refuses that Ingress alone.
    run.expect_routed_to("pinned.example.com", "/", "secure")
        .await;
    assert_eq!(run.get("pinned-wrong.example.com", "/").await.status, 503);
    assert_eq!(run.get("pinned-missing.example.com", "/").await.status, 404);
    let status = run.status().await;
    let diagnostics = status["controller"]["diagnostics"].to_string();
    assert!(
        diagnostics.contains("rejected: Ingress backends/pinned-missing: annotation hawser.dev/backend-ca-secret: Secret backends/no-such-ca"),
        "{diagnostics}"
    );
    assert!(!diagnostics.contains("rejected: Service"), "{diagnostics}");
    // HTTP/2 in clear text to the pods.
    let reply = run.expect_routed_to("h2.example.com", "/", "h2").await;
    assert_eq!(reply.proto, "HTTP/2.0");
    // Sticky: the cookie names the server, and keeps the client there.
    let first = run.get("sticky.example.com", "/").await;
    let cookie = first
        .header("set-cookie")
        .expect("an affinity cookie")
        .to_string();
    let (value, _) = cookie.split_once(';').unwrap_or((&cookie, ""));
    assert!(value.starts_with("route=ep_"), "{cookie}");
    let pinned = first.echo().pod;
    for _ in 0..5 {
        let again = run
            .request(&support::Request::get("sticky.example.com", "/").header("Cookie", value))
            .await;
        assert_eq!(again.echo().pod, pinned);
    }

    // New pods arrive at runtime: the same worker serves them.
    let workers = run.worker_pids().await;
    let before = run.desired_generation().await;
    run.write_manifest(
        "secure-slice.yaml",
        &slice(&backends, "secure", "https", &["secure-a", "secure-b"]),
    );
    run.write_manifest(
        "sticky-slice.yaml",
        &slice(
            &backends,
            "sticky",
            "http",
            &["sticky-a", "sticky-b", "sticky-c"],
        ),
    );
    run.write_manifest(
        "verified-slice.yaml",
        &slice(&backends, "verified", "https", &["secure-a", "secure-b"]),
    );
    run.expect_outcome_after(before, "runtime").await;
    run.expect_pods_reached("secure.example.com", "/", &["secure-a", "secure-b"])
        .await;
    run.expect_pods_reached("verified.example.com", "/", &["secure-a", "secure-b"])
        .await;
    let to_new = format!("route={}", server_of(&backends, "sticky-c"));
    for _ in 0..3 {
        let reply = run
            .request(&support::Request::get("sticky.example.com", "/").header("Cookie", &to_new))
            .await;
        assert_eq!(
            reply.echo().pod,
            "sticky-c",
            "the added server keeps its sessions"
        );
    }
    assert_eq!(run.worker_pids().await, workers);
}
