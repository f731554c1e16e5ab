//! The objects a render rejected, each with the tests it may explain, so a
//! failed test names the rejections it may rely on and no others.

use hawser_crd::ValidationTest;
use hawser_model::{Kind, Store};
use hawser_render::{Diagnostic, Severity};

use super::Answer;

/// A rejected object, as a failure message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rejection {
    /// `Ingress shop/web: <why>`.
    pub text: String,
    pub scope: Scope,
}

/// Which tests a rejection may explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Scope {
    /// Any test (an Ingress for every host, an IngressClass).
    Every,
    /// Tests whose host one of these (Ingress rule hosts, wildcards allowed) matches.
    Hosts(Vec<String>),
    /// A Service (`namespace/name`): tests expecting it, and tests HAProxy
    /// answered 503 itself (what a rejected Service's backends answer).
    Service(String),
    /// None over plain HTTP (a TLS Secret; EndpointSlices are replaced).
    Nothing,
}

/// The rejections among a render's diagnostics, scoped with the objects of `store`.
pub(super) fn rejections(diagnostics: &[Diagnostic], store: &Store) -> Vec<Rejection> {
    diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Rejected)
        .map(|d| {
            let key = &d.object.key;
            let scope = match d.object.kind {
                Kind::Ingress => {
                    store
                        .ingresses()
                        .find(|i| &i.key == key)
                        .map_or(Scope::Every, |ingress| {
                            let hosts: Option<Vec<String>> =
                                ingress.rules.iter().map(|r| r.host.clone()).collect();
                            match hosts {
                                Some(hosts) if ingress.default_backend.is_none() => {
                                    Scope::Hosts(hosts)
                                }
                                _ => Scope::Every,
                            }
                        })
                }
                Kind::IngressClass => Scope::Every,
                Kind::Service => Scope::Service(format!("{}/{}", key.namespace, key.name)),
                Kind::Secret | Kind::EndpointSlice | Kind::Namespace | Kind::ConfigMap => {
                    Scope::Nothing
                }
                // Gateway API routing is not told apart by host here yet.
                Kind::GatewayClass
                | Kind::Gateway
                | Kind::HttpRoute
                | Kind::GrpcRoute
                | Kind::TlsRoute
                | Kind::TcpRoute
                | Kind::ReferenceGrant => Scope::Every,
            };
            Rejection {
                text: format!("{}: {}", d.object, d.message),
                scope,
            }
        })
        .collect()
}

impl Rejection {
    /// Whether this rejection may be why `test` got `answer`.
    pub fn may_explain(&self, test: &ValidationTest, answer: &Result<Answer, String>) -> bool {
        match &self.scope {
            Scope::Every => true,
            Scope::Hosts(hosts) => {
                let host = request_host(&test.request.host);
                hosts.iter().any(|rule| host_matches(rule, &host))
            }
            Scope::Service(service) => {
                test.expect.service.as_ref() == Some(service)
                    || matches!(
                        answer,
                        Ok(Answer {
                            status: 503,
                            service: None
                        })
                    )
            }
            Scope::Nothing => false,
        }
    }
}

/// The host HAProxy routes on: lower-cased, without a port.
fn request_host(host: &str) -> String {
    host.split(':')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// An Ingress rule host matches exactly, or as `*.<domain>` one label deep.
fn host_matches(rule: &str, host: &str) -> bool {
    match rule.strip_prefix("*.") {
        Some(domain) => host
            .split_once('.')
            .is_some_and(|(label, rest)| !label.is_empty() && rest == domain),
        None => rule == host,
    }
}
