//! The Gateway API routing table: what templates read to write frontends,
//! routing rules and TCP/TLS passthrough for the Gateways hawser owns.
//!
//! Everything here is validated: hostnames, paths, header names and values,
//! regular expressions and redirect fields hold only characters
//! `crate::validate` allows. Rules are in the spec's precedence order, so a
//! template can write them first-match-wins.

use std::collections::{BTreeMap, BTreeSet};

use hawser_model::{
    GrpcMethodMatch, HeaderModifier, HttpTimeouts, MirrorFraction, ObjectKey, ObjectRef, PathMatch,
    RequestRedirect, TlsMode, UrlRewrite, ValueMatch,
};
use serde::Serialize;

use crate::backends::BackendKey;

/// Every owned Gateway with its programmed listeners and attached routes.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GatewayTable {
    /// Sorted by namespace/name.
    pub gateways: Vec<GatewayEntry>,
    /// Every Service port a rule, mirror or stream route sends to, with the
    /// first route that asked for it: what `backends` turns into HAProxy backends.
    #[serde(skip)]
    pub backends: BTreeMap<BackendKey, ObjectRef>,
    /// TLS Secrets the listeners terminate with, and the Gateways using them.
    #[serde(skip)]
    pub certificates: BTreeMap<ObjectKey, BTreeSet<ObjectRef>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GatewayEntry {
    pub gateway: ObjectKey,
    pub class_name: String,
    /// Listeners that are accepted, not conflicted and fully resolved, in spec order.
    pub listeners: Vec<ListenerEntry>,
}

/// One listener. Several listeners may share a port (with distinct
/// hostnames); the template merges them into one frontend.
#[derive(Debug, Clone, Serialize)]
pub struct ListenerEntry {
    pub name: String,
    pub port: u16,
    pub protocol: ListenerProtocol,
    /// Requests (or SNI names) this listener accepts; `None` is any.
    /// A `*.` wildcard matches any number of labels (Gateway API semantics).
    pub hostname: Option<String>,
    pub tls: Option<ListenerTlsEntry>,
    /// HTTP and HTTPS listeners, in precedence order.
    pub http_rules: Vec<HttpRuleEntry>,
    pub grpc_rules: Vec<GrpcRuleEntry>,
    /// TLS passthrough listeners: SNI → backends, in precedence order.
    pub tls_routes: Vec<TlsRouteEntry>,
    /// TCP listeners: the first entry is served (the oldest route).
    pub tcp_routes: Vec<TcpRouteEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum ListenerProtocol {
    #[serde(rename = "HTTP")]
    Http,
    #[serde(rename = "HTTPS")]
    Https,
    #[serde(rename = "TLS")]
    Tls,
    #[serde(rename = "TCP")]
    Tcp,
}

impl ListenerProtocol {
    pub fn parse(protocol: &str) -> Option<Self> {
        match protocol {
            "HTTP" => Some(ListenerProtocol::Http),
            "HTTPS" => Some(ListenerProtocol::Https),
            "TLS" => Some(ListenerProtocol::Tls),
            "TCP" => Some(ListenerProtocol::Tcp),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ListenerTlsEntry {
    pub mode: TlsMode,
    /// The Secrets (holding `tls.crt` and `tls.key`) to terminate with, in order.
    pub certificates: Vec<ObjectKey>,
}

/// One match of one HTTPRoute rule, for one hostname.
#[derive(Debug, Clone, Serialize)]
pub struct HttpRuleEntry {
    pub route: ObjectKey,
    pub rule_index: usize,
    pub match_index: usize,
    /// The intersection of listener and route hostnames; `None` is any host.
    pub hostname: Option<String>,
    pub path: PathMatch,
    pub method: Option<String>,
    pub headers: Vec<ValueMatch>,
    pub query_params: Vec<ValueMatch>,
    /// In the order given.
    pub filters: Vec<FilterEntry>,
    pub backends: Vec<WeightedBackend>,
    pub timeouts: HttpTimeouts,
    /// No request can reach a backend (none given, none resolved, or every
    /// weight 0) and no redirect answers: the rule answers 500.
    pub unavailable: bool,
}

/// One match of one GRPCRoute rule, for one hostname.
#[derive(Debug, Clone, Serialize)]
pub struct GrpcRuleEntry {
    pub route: ObjectKey,
    pub rule_index: usize,
    pub match_index: usize,
    pub hostname: Option<String>,
    /// `None` matches every service and method.
    pub method: Option<GrpcMethodMatch>,
    pub headers: Vec<ValueMatch>,
    pub filters: Vec<FilterEntry>,
    pub backends: Vec<WeightedBackend>,
    pub unavailable: bool,
}

/// A TLSRoute on a passthrough listener, for one SNI hostname.
#[derive(Debug, Clone, Serialize)]
pub struct TlsRouteEntry {
    pub route: ObjectKey,
    /// `None` is any SNI name the listener accepts.
    pub hostname: Option<String>,
    pub backends: Vec<WeightedBackend>,
    pub unavailable: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TcpRouteEntry {
    pub route: ObjectKey,
    pub backends: Vec<WeightedBackend>,
    pub unavailable: bool,
}

/// A filter, validated. A RequestMirror is here only when its backendRef
/// resolved: one that does not is dropped (the route's `ResolvedRefs` says
/// why) and the rule serves without it.
#[derive(Debug, Clone, Serialize)]
pub enum FilterEntry {
    RequestHeaderModifier(HeaderModifier),
    ResponseHeaderModifier(HeaderModifier),
    RequestRedirect(RequestRedirect),
    UrlRewrite(UrlRewrite),
    RequestMirror(MirrorEntry),
}

/// A copy of the request goes to a Service port too; its answer is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MirrorEntry {
    pub key: BackendKey,
    /// The Service port's HAProxy backend name.
    pub backend: String,
    /// The share of requests copied.
    pub fraction: MirrorFraction,
}

#[derive(Debug, Clone, Serialize)]
pub struct WeightedBackend {
    pub target: BackendTarget,
    /// Share of requests, relative to the rule's other backends; 0 sends none.
    pub weight: u32,
    /// Filters applied only to requests sent to this backend.
    pub filters: Vec<FilterEntry>,
}

#[cfg(test)]
impl WeightedBackend {
    /// Port `port` of Service `app/<service>`, with `weight` and no filters.
    pub(crate) fn to_service(service: &str, port: i32, weight: u32) -> WeightedBackend {
        let key = BackendKey {
            namespace: "app".to_string(),
            service: service.to_string(),
            port: hawser_model::ServicePortRef::Number(port),
            overrides: BTreeMap::new(),
        };
        WeightedBackend {
            target: BackendTarget::Service {
                backend: key.name(),
                key,
            },
            weight,
            filters: Vec::new(),
        }
    }
}

impl ListenerEntry {
    /// A listener with no hostname, no TLS and no routes yet.
    pub(crate) fn new(name: &str, port: u16, protocol: ListenerProtocol) -> ListenerEntry {
        ListenerEntry {
            name: name.to_string(),
            port,
            protocol,
            hostname: None,
            tls: None,
            http_rules: Vec::new(),
            grpc_rules: Vec::new(),
            tls_routes: Vec::new(),
            tcp_routes: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum BackendTarget {
    /// A Service port; `backend` is its HAProxy backend name.
    Service { key: BackendKey, backend: String },
    /// A reference that did not resolve: its share of requests answers 500.
    Unresolved { reason: String },
}
