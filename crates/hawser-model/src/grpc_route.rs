//! GRPCRoute view (`gateway.networking.k8s.io/v1`).

use serde::Serialize;

use crate::{HttpBackendRef, HttpFilter, RouteMeta, ValueMatch, ValueMatchKind};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrpcRoute {
    pub meta: RouteMeta,
    pub rules: Vec<GrpcRouteRule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrpcRouteRule {
    pub name: Option<String>,
    /// Never empty: a rule without matches matches every gRPC request.
    pub matches: Vec<GrpcRouteMatch>,
    /// Header modifiers, mirrors, or unsupported filters.
    pub filters: Vec<HttpFilter>,
    pub backend_refs: Vec<HttpBackendRef>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GrpcRouteMatch {
    pub method: Option<GrpcMethodMatch>,
    pub headers: Vec<ValueMatch>,
}

/// `service` and `method` (either may be absent, not both); the kind applies to both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrpcMethodMatch {
    pub kind: ValueMatchKind,
    pub service: Option<String>,
    pub method: Option<String>,
}
