//! EndpointSlice view (`discovery.k8s.io/v1`).

use serde::Serialize;

use crate::ObjectKey;

/// The label that ties a slice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointSlice {
    pub key: ObjectKey,
    /// From the `kubernetes.io/service-name` label; a slice without it serves nobody.
    pub service_name: Option<String>,
    /// `IPv4`, `IPv6` or `FQDN`.
    pub address_type: String,
    pub ports: Vec<EndpointPort>,
    pub endpoints: Vec<Endpoint>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointPort {
    /// Matches the Service port's name; empty for an unnamed port.
    pub name: String,
    pub port: i32,
    pub protocol: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    pub addresses: Vec<String>,
    /// Kubernetes treats an unknown (`nil`) condition as ready and serving.
    pub ready: bool,
    pub serving: bool,
    pub terminating: bool,
    /// The pod (or other target) behind the endpoint, when given.
    pub target: Option<String>,
}
