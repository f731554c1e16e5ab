//! Service view (`v1`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{ObjectKey, ServicePortRef};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Service {
    pub key: ObjectKey,
    /// Only the annotations of [`SERVICE_ANNOTATION_PREFIXES`]; the rest are
    /// dropped on conversion.
    pub annotations: BTreeMap<String, String>,
    pub service_type: ServiceType,
    pub ports: Vec<ServicePort>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ServiceType {
    /// ClusterIP, NodePort, LoadBalancer: endpoints come from EndpointSlices.
    Endpoints,
    /// `type: ExternalName`: one upstream, the DNS name given.
    ExternalName(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServicePort {
    /// Empty when the Service has a single unnamed port.
    pub name: String,
    pub port: i32,
    /// `targetPort` as given; for ExternalName services this is the upstream port.
    pub target_port: Option<ServicePortRef>,
    pub protocol: String,
}

/// The prefix of the annotations hawser reads.
pub const ANNOTATION_PREFIX: &str = "hawser.dev/";
/// The prefixes of the Service annotations kept: hawser's, and
/// haproxytech's (it reads backend settings on Services too).
pub const SERVICE_ANNOTATION_PREFIXES: &[&str] =
    &[ANNOTATION_PREFIX, "haproxy.org/", "haproxy.com/"];

impl Service {
    /// The port an Ingress backend refers to, by number or by name.
    pub fn port(&self, reference: &ServicePortRef) -> Option<&ServicePort> {
        self.ports.iter().find(|p| match reference {
            ServicePortRef::Number(n) => p.port == *n,
            ServicePortRef::Name(name) => &p.name == name,
        })
    }
}
