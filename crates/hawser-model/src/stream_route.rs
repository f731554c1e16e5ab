//! TLSRoute and TCPRoute views: routes that forward a connection as it is,
//! chosen by SNI (TLS passthrough) or by listener (TCP).

use serde::Serialize;

use crate::{BackendRef, RouteMeta};

/// A TLSRoute: SNI hostnames (in `meta.hostnames`) → weighted backends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsRoute {
    pub meta: RouteMeta,
    pub rules: Vec<StreamRouteRule>,
}

/// A TCPRoute: every connection to the listener → weighted backends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TcpRoute {
    pub meta: RouteMeta,
    pub rules: Vec<StreamRouteRule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamRouteRule {
    pub name: Option<String>,
    pub backend_refs: Vec<BackendRef>,
}
