//! What every Gateway API route shares: its identity, the parents it asks to
//! attach to, its hostnames and the backends it refers to. The route kinds
//! themselves are in [`crate::http_route`], [`crate::grpc_route`] and
//! [`crate::stream_route`].

use serde::Serialize;

use crate::{GATEWAY_API_GROUP, ObjectKey};

/// The part of a route that attachment and status read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteMeta {
    pub key: ObjectKey,
    pub generation: Option<i64>,
    /// RFC 3339; absent for local manifests (which then count as newest).
    pub created: Option<String>,
    pub parent_refs: Vec<ParentRef>,
    /// Empty for TCPRoute, and for routes that match any host.
    pub hostnames: Vec<String>,
}

/// A route's `parentRefs` entry, with group and kind defaulted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ParentRef {
    pub group: String,
    pub kind: String,
    /// `None` means the route's own namespace.
    pub namespace: Option<String>,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<i32>,
}

impl ParentRef {
    /// Whether this names a Gateway (rather than, say, a Service for a mesh).
    pub fn is_gateway(&self) -> bool {
        self.group == GATEWAY_API_GROUP && self.kind == "Gateway"
    }

    /// The parent's key, given the namespace of the route that names it.
    pub fn key(&self, route_namespace: &str) -> ObjectKey {
        let namespace = self.namespace.as_deref().unwrap_or(route_namespace);
        ObjectKey::new(namespace, &self.name)
    }
}

/// A `backendRefs` entry (or a mirror's `backendRef`), with group, kind and
/// weight defaulted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct BackendRef {
    /// `""` for the core group.
    pub group: String,
    pub kind: String,
    pub name: String,
    /// `None` means the route's own namespace.
    pub namespace: Option<String>,
    pub port: Option<i32>,
    /// Defaults to 1; 0 sends no traffic.
    pub weight: i32,
}

impl BackendRef {
    /// Whether this names a core Service (the only backend kind hawser serves).
    pub fn is_service(&self) -> bool {
        (self.group.is_empty() || self.group == "core") && self.kind == "Service"
    }
}
