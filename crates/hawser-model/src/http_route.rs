//! HTTPRoute view (`gateway.networking.k8s.io/v1`): matches, filters, weighted
//! backends and timeouts, with the spec's defaults applied.

use serde::Serialize;

use crate::{BackendRef, RouteMeta};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpRoute {
    pub meta: RouteMeta,
    pub rules: Vec<HttpRouteRule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpRouteRule {
    /// The rule's optional `name`.
    pub name: Option<String>,
    /// Never empty: a rule without matches matches every request (`PathPrefix /`).
    pub matches: Vec<HttpRouteMatch>,
    pub filters: Vec<HttpFilter>,
    pub backend_refs: Vec<HttpBackendRef>,
    pub timeouts: HttpTimeouts,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpRouteMatch {
    /// Defaults to `PathPrefix /`.
    pub path: PathMatch,
    pub headers: Vec<ValueMatch>,
    pub query_params: Vec<ValueMatch>,
    /// An upper-case HTTP method.
    pub method: Option<String>,
}

impl Default for HttpRouteMatch {
    fn default() -> Self {
        HttpRouteMatch {
            path: PathMatch {
                kind: PathMatchKind::PathPrefix,
                value: "/".to_string(),
            },
            headers: Vec::new(),
            query_params: Vec::new(),
            method: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathMatch {
    pub kind: PathMatchKind,
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum PathMatchKind {
    Exact,
    PathPrefix,
    RegularExpression,
}

/// A header, query parameter or gRPC header match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValueMatch {
    pub name: String,
    pub value: String,
    pub kind: ValueMatchKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ValueMatchKind {
    Exact,
    RegularExpression,
}

/// A route or backend filter. GRPCRoute uses the header modifiers and mirror.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum HttpFilter {
    RequestHeaderModifier(HeaderModifier),
    ResponseHeaderModifier(HeaderModifier),
    RequestRedirect(RequestRedirect),
    UrlRewrite(UrlRewrite),
    RequestMirror(RequestMirror),
    /// A filter hawser does not implement (`ExtensionRef`, `CORS`), by type name.
    Unsupported(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HeaderModifier {
    pub set: Vec<(String, String)>,
    pub add: Vec<(String, String)>,
    pub remove: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRedirect {
    /// `http` or `https`.
    pub scheme: Option<String>,
    pub hostname: Option<String>,
    pub path: Option<PathModifier>,
    pub port: Option<i32>,
    /// Defaults to 302.
    pub status_code: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UrlRewrite {
    pub hostname: Option<String>,
    pub path: Option<PathModifier>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PathModifier {
    ReplaceFullPath(String),
    /// Replaces the part of the path the rule's `PathPrefix` matched.
    ReplacePrefixMatch(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestMirror {
    /// Its weight is meaningless and left at 1.
    pub backend: BackendRef,
    /// Share of requests mirrored: `fraction` as given, `percent` as a
    /// fraction of 100, every request when neither is given.
    pub fraction: MirrorFraction,
}

/// `numerator` requests out of every `denominator` (`0 <= numerator <= denominator`, `denominator >= 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MirrorFraction {
    pub numerator: u32,
    pub denominator: u32,
}

impl MirrorFraction {
    /// Every request.
    pub const ALL: MirrorFraction = MirrorFraction {
        numerator: 1,
        denominator: 1,
    };

    /// No request at all.
    pub fn is_none(self) -> bool {
        self.numerator == 0
    }

    /// Every request.
    pub fn is_all(self) -> bool {
        self.numerator >= self.denominator
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpBackendRef {
    pub backend: BackendRef,
    /// Filters applied only to requests sent to this backend.
    pub filters: Vec<HttpFilter>,
}

/// `timeouts`, in milliseconds; `Some(0)` disables the timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HttpTimeouts {
    pub request_ms: Option<u64>,
    pub backend_request_ms: Option<u64>,
}
