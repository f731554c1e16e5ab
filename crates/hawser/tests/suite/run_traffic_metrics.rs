//! `hawser run`'s `/metrics` names HAProxy's traffic by Kubernetes names:
//! per Service port (`hawser_service_*`) and per Ingress
//! (`hawser_route_*`), counted from real requests through real HAProxy
//! (fixture `run_traffic_metrics/`). A spare backend that served one
//! Service and is then lent to another counts, for the second, only what
//! it served for it.
//!
//! Oracle: the series' values equal the requests the test sent, by route
//! and by Service, and by response class (a Service whose pod refuses
//! connections answers 503, counted as 5xx and as connection errors).

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Backends, Manifests, Request, Run, RunOptions, pod};

fn service_series(name: &str, service: &str) -> String {
    format!("{name}{{namespace=\"shop\",service=\"{service}\",port=\"80\"}}")
}

fn route_series(name: &str, ingress: &str) -> String {
    kind_series(name, "Ingress", ingress)
}

fn kind_series(name: &str, kind: &str, route: &str) -> String {
    format!("{name}{{namespace=\"shop\",kind=\"{kind}\",name=\"{route}\"}}")
}

/// `series` with one more label.
fn with_label(series: &str, label: &str, value: &str) -> String {
    format!("{},{label}=\"{value}\"}}", series.trim_end_matches('}'))
}

async fn send(run: &Run, host: &str, path: &str, count: usize, status: u16) {
    for _ in 0..count {
        let response = run.get(host, path).await;
        assert_eq!(response.status, status, "{host}{path}: {}", response.text());
    }
}

#[tokio::test]
async fn traffic_is_counted_by_service_and_by_route() {
    let backends = Backends::start(&[
        pod("shop", "web", "web-a"),
        pod("shop", "web", "web-b"),
        pod("shop", "api", "api-a"),
    ]);
    let manifests = Manifests::from_fixture("run_traffic_metrics", &backends.vars());
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;

    send(&run, "shop.example.com", "/", 5, 200).await;
    send(&run, "shop.example.com", "/api/items", 3, 200).await;
    send(&run, "admin.example.com", "/", 2, 200).await;
    send(&run, "shop.example.com", "/broken", 1, 503).await;
    send(&run, "catalog.example.com", "/", 2, 200).await;
    let beta = Request::get("catalog.example.com", "/").header("x-beta", "1");
    assert_eq!(run.request(&beta).await.status, 200);

    run.expect_metric(&service_series("hawser_service_requests_total", "web"), 8.0)
        .await;
    let web_responses = service_series("hawser_service_responses_total", "web");
    run.expect_metric(&with_label(&web_responses, "code", "2xx"), 8.0)
        .await;
    run.expect_metric(&service_series("hawser_service_requests_total", "api"), 5.0)
        .await;
    let broken = service_series("hawser_service_responses_total", "broken");
    run.expect_metric(&with_label(&broken, "code", "5xx"), 1.0)
        .await;
    let refused = service_series("hawser_service_connection_errors_total", "broken");
    let errors = run.metric(&refused).await.unwrap_or_default();
    assert!(errors >= 1.0, "{refused} = {errors}");
    let servers = service_series("hawser_service_servers", "web");
    run.expect_metric(&with_label(&servers, "state", "up"), 2.0)
        .await;

    let storefront = route_series("hawser_route_requests_total", "storefront");
    run.expect_metric(&storefront, 9.0).await;
    run.expect_metric(&route_series("hawser_route_requests_total", "admin"), 2.0)
        .await;
    let storefront_responses = route_series("hawser_route_responses_total", "storefront");
    run.expect_metric(&with_label(&storefront_responses, "code", "2xx"), 8.0)
        .await;
    run.expect_metric(&with_label(&storefront_responses, "code", "5xx"), 1.0)
        .await;
    // Gateway API routes, from the gateway map and from a rule of their own.
    let catalog = kind_series("hawser_route_requests_total", "HTTPRoute", "catalog");
    run.expect_metric(&catalog, 2.0).await;
    let beta = kind_series("hawser_route_requests_total", "HTTPRoute", "beta");
    run.expect_metric(&beta, 1.0).await;
}

#[tokio::test]
async fn the_json_access_log_names_the_route_and_the_service_and_haproxy_exports_its_own() {
    let backends = Backends::start(&[
        pod("shop", "web", "web-a"),
        pod("shop", "web", "web-b"),
        pod("shop", "api", "api-a"),
    ]);
    let manifests = Manifests::from_fixture("run_traffic_metrics", &backends.vars());
    let options = RunOptions {
        config_tail: "  accessLogFormat: json\n  haproxyMetrics: true\n".to_string(),
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    run.wait_converged().await;
    send(&run, "shop.example.com", "/api/items?page=2", 1, 200).await;
    // HAProxy's own exporter, on the health listener.
    let exporter = run.get_on(run.health, "hawser", "/metrics").await;
    assert_eq!(exporter.status, 200, "{}", exporter.text());
    assert!(
        exporter.text().contains("haproxy_process_"),
        "{}",
        exporter.text()
    );
    send(&run, "catalog.example.com", "/", 1, 200).await;

    let ingress = access_log_line(&run, "/api/items?page=2").await;
    for (field, value) in [
        ("route_kind", "Ingress"),
        ("route_namespace", "shop"),
        ("route", "storefront"),
        ("service_namespace", "shop"),
        ("service", "api"),
        ("service_port", "80"),
        ("method", "GET"),
        ("host", "shop.example.com"),
    ] {
        assert_eq!(ingress[field], value, "{field}: {ingress:#}");
    }
    assert_eq!(ingress["status"], 200, "{ingress:#}");
    let route = access_log_line(&run, "/").await;
    for (field, value) in [
        ("route_kind", "HTTPRoute"),
        ("route", "catalog"),
        ("service", "api"),
    ] {
        assert_eq!(route[field], value, "{field}: {route:#}");
    }
}

/// Waits for the JSON access log line of the request for `uri`.
async fn access_log_line(run: &Run, uri: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let output = run.output();
        let found = output
            .lines()
            .filter_map(|line| line.strip_prefix("stdout: "))
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|entry| entry["uri"] == uri);
        if let Some(entry) = found {
            return entry;
        }
        assert!(
            Instant::now() < deadline,
            "no JSON access log line for {uri}:\n{output}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Service `name` of namespace `shop` with its one pod, and Ingress `name`
/// routing `<name>.example.com` to it.
fn service(backends: &Backends, name: &str) -> String {
    let echo = backends.pod(&format!("{name}-a"));
    let (ip, port) = (echo.addr.ip(), echo.addr.port());
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{ name: {name}, namespace: shop }}\n\
         spec:\n  ports: [{{ name: http, port: 80 }}]\n---\n\
         apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
         metadata:\n  name: {name}-1\n  namespace: shop\n  labels: {{ kubernetes.io/service-name: {name} }}\n\
         addressType: IPv4\nports: [{{ name: http, port: {port} }}]\nendpoints:\n  - addresses: [\"{ip}\"]\n---\n\
         apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: {name}, namespace: shop }}\n\
         spec:\n  ingressClassName: hawser\n  rules:\n    - host: {name}.example.com\n      http:\n        paths:\n\
         \x20         - path: /\n            pathType: Prefix\n            backend: {{ service: {{ name: {name}, port: {{ number: 80 }} }} }}\n"
    )
}

/// Writes or removes a manifest and waits until HAProxy serves the result
/// without a reload.
async fn apply_at_runtime(run: &Run, change: impl FnOnce()) {
    let before = run.status().await["desired_generation"]
        .as_u64()
        .unwrap_or(0);
    change();
    let status = run
        .wait_for_status("the change applied", |s| {
            s["applied_generation"].as_u64().unwrap_or(0) > before
                && s["desired_generation"] == s["applied_generation"]
        })
        .await;
    assert_eq!(
        status["agent"]["last_outcome"]["kind"], "runtime",
        "{status:#}"
    );
}

#[tokio::test]
async fn a_spare_lent_to_a_second_service_counts_none_of_the_first() {
    let backends = Backends::start(&[
        pod("shop", "web", "web-a"),
        pod("shop", "web", "web-b"),
        pod("shop", "api", "api-a"),
        pod("shop", "old", "old-a"),
        pod("shop", "new", "new-a"),
    ]);
    let manifests = Manifests::from_fixture("run_traffic_metrics", &backends.vars());
    // One spare of the plain shape: `old` and then `new` are lent the same.
    let options = RunOptions {
        config_tail: "  spareBackends: 1\n".to_string(),
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    run.wait_converged().await;

    let old = service(&backends, "old");
    apply_at_runtime(&run, || run.write_manifest("old.yaml", &old)).await;
    let old_requests = service_series("hawser_service_requests_total", "old");
    // The first scrape that sees the spare serve `old` counts from there.
    run.expect_metric(&old_requests, 0.0).await;
    send(&run, "old.example.com", "/", 4, 200).await;
    run.expect_metric(&old_requests, 4.0).await;
    run.expect_metric("hawser_spare_backends{state=\"lent\"}", 1.0)
        .await;

    let gone = run.manifests().join("old.yaml");
    apply_at_runtime(&run, || std::fs::remove_file(&gone).unwrap()).await;
    let new = service(&backends, "new");
    apply_at_runtime(&run, || run.write_manifest("new.yaml", &new)).await;
    let new_requests = service_series("hawser_service_requests_total", "new");
    run.expect_metric(&new_requests, 0.0).await;
    send(&run, "new.example.com", "/", 3, 200).await;
    run.expect_metric(&new_requests, 3.0).await;
    run.expect_metric(&route_series("hawser_route_requests_total", "new"), 3.0)
        .await;
    assert_eq!(run.metric(&old_requests).await, None, "old is gone");
}
