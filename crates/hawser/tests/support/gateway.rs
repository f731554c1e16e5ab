//! Gateway API conformance-style checks over `hawser run`: a fixture with a
//! GatewayClass, a Gateway, routes and echo backends, served by the real
//! controller, agent and HAProxy; requests checked the way the upstream
//! conformance suite checks them (the backend's namespace and service as
//! the echo server reports them, status codes, Location, headers, weights).

use std::collections::BTreeMap;

use hawser_echo::EchoReply;

use super::http::{self, Request, Response};
use super::{Backends, Manifests, Pod, Run, Vars};

/// A Gateway fixture being served by `hawser run`. Dereferences to the
/// [`Run`] for everything else.
#[derive(Debug)]
pub struct Gateway {
    pub run: Run,
    pub manifests: Manifests,
    pub backends: Backends,
}

impl std::ops::Deref for Gateway {
    type Target = Run;

    fn deref(&self) -> &Run {
        &self.run
    }
}

/// The namespaces the upstream conformance suite's backends live in, which
/// the fixtures use too.
pub const INFRA: &str = "gateway-conformance-infra";
pub const WEB: &str = "gateway-conformance-web-backend";

/// Starts an echo backend per pod, fills the fixture `stem` (plus `vars`)
/// and serves it with `hawser run` until it is ready.
pub async fn serve_gateway(stem: &str, pods: &[Pod], mut vars: Vars) -> Gateway {
    let backends = Backends::start(pods);
    vars.extend(backends.vars());
    let manifests = Manifests::from_fixture(stem, &vars);
    let run = Run::start(manifests.path()).await;
    Gateway {
        run,
        manifests,
        backends,
    }
}

impl Gateway {
    /// Sends `request` to the HTTP port (the Gateway's port-80 listeners).
    pub async fn send(&self, request: &Request) -> Response {
        http::http1_request(self.run.http, request)
            .await
            .unwrap_or_else(|e| panic!("{request:?}: {e}\n{}", self.run.output()))
    }

    /// Asserts the request reached Service `namespace/service`; returns
    /// what the echo server saw.
    pub async fn expect_backend(
        &self,
        request: &Request,
        namespace: &str,
        service: &str,
    ) -> EchoReply {
        let response = self.send(request).await;
        assert_eq!(
            response.status,
            200,
            "{} {} (Host {}): {}",
            request.method,
            request.target,
            request.host,
            response.text()
        );
        let reply = response.echo();
        assert_eq!(
            (reply.namespace.as_str(), reply.service.as_str()),
            (namespace, service),
            "{} {} (Host {}) reached {}/{}",
            request.method,
            request.target,
            request.host,
            reply.namespace,
            reply.service
        );
        reply
    }

    /// Asserts HAProxy itself answered `status` (no echo server did).
    pub async fn expect_status(&self, request: &Request, status: u16) -> Response {
        let response = self.send(request).await;
        assert_eq!(
            response.status,
            status,
            "{} {} (Host {}): {}",
            request.method,
            request.target,
            request.host,
            response.text()
        );
        response
    }

    /// Asserts a redirect with this status and Location.
    pub async fn expect_redirect(&self, request: &Request, status: u16, location: &str) {
        let response = self.expect_status(request, status).await;
        assert_eq!(
            response.header("location"),
            Some(location),
            "{} (Host {})",
            request.target,
            request.host
        );
    }

    /// Asserts a gRPC call to `path` (`/<service>/<method>`), sent as h2c to
    /// the HTTP port, reached Service `namespace/service` over HTTP/2.
    pub async fn expect_grpc_backend(
        &self,
        authority: &str,
        path: &str,
        namespace: &str,
        service: &str,
    ) -> EchoReply {
        let response = http::h2c_grpc(self.run.http, authority, path)
            .await
            .unwrap_or_else(|e| panic!("gRPC {path}: {e}\n{}", self.run.output()));
        assert_eq!(response.status, 200, "gRPC {path}: {}", response.text());
        let reply = response.echo();
        assert_eq!(
            (reply.namespace.as_str(), reply.service.as_str()),
            (namespace, service),
            "gRPC {path} reached {}/{}",
            reply.namespace,
            reply.service
        );
        assert_eq!(
            reply.proto, "HTTP/2.0",
            "gRPC {path}: the backend's protocol"
        );
        reply
    }

    /// Asserts a gRPC call to `path` is answered `status` by HAProxy.
    pub async fn expect_grpc_status(&self, authority: &str, path: &str, status: u16) {
        let response = http::h2c_grpc(self.run.http, authority, path)
            .await
            .unwrap_or_else(|e| panic!("gRPC {path}: {e}\n{}", self.run.output()));
        assert_eq!(response.status, status, "gRPC {path}: {}", response.text());
    }

    /// Waits until the echo backend of `pod` logged `method path`: a
    /// mirrored copy arrives beside the answer, not before it.
    pub async fn expect_request_logged(&self, pod: &str, method: &str, path: &str) {
        let line = request_log_line(method, path);
        let deadline = tokio::time::Instant::now() + super::TIMEOUT;
        while !self.backends.pod(pod).output().contains(&line) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "pod {pod} never received {method} {path}:\n{}\n{}",
                self.backends.pod(pod).output(),
                self.run.output()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Asserts the echo backend of `pod` has not logged `method path`.
    pub fn expect_request_not_logged(&self, pod: &str, method: &str, path: &str) {
        let output = self.backends.pod(pod).output();
        assert!(
            !output.contains(&request_log_line(method, path)),
            "pod {pod} received {method} {path}:\n{output}"
        );
    }

    /// Sends `count` requests and returns how many each Service answered.
    pub async fn count_backends(&self, request: &Request, count: usize) -> BTreeMap<String, usize> {
        let mut seen = BTreeMap::new();
        for _ in 0..count {
            let reply = self.expect_status(request, 200).await.echo();
            *seen.entry(reply.service).or_insert(0) += 1;
        }
        seen
    }
}

/// The echo server saw header `name` with exactly these values.
pub fn expect_request_header(reply: &EchoReply, name: &str, values: &[&str]) {
    let seen: Vec<&str> = reply
        .headers
        .get(name)
        .map(|v| v.iter().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(seen, values, "request header {name} as the backend saw it");
}

/// How `hawser echo` logs a request (`... echo method=GET path=/a?b=c host=...`).
fn request_log_line(method: &str, path: &str) -> String {
    format!(" method={method} path={path} host=")
}
