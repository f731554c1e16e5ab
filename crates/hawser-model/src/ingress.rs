//! Ingress and IngressClass views (`networking.k8s.io/v1`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ObjectKey;

/// The legacy annotation that named a class before `spec.ingressClassName`.
pub const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
/// Marks an IngressClass as the one for Ingresses that name no class.
pub const IS_DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ingress {
    pub key: ObjectKey,
    /// RFC 3339 creation time; the oldest object wins a conflict, as in Kubernetes.
    pub created: Option<String>,
    pub class_name: Option<String>,
    pub annotations: BTreeMap<String, String>,
    pub default_backend: Option<IngressBackend>,
    pub tls: Vec<IngressTls>,
    pub rules: Vec<IngressRule>,
}

impl Ingress {
    /// `spec.ingressClassName`, or the legacy class annotation when that is unset.
    pub fn requested_class(&self) -> Option<&str> {
        self.class_name.as_deref().or_else(|| {
            self.annotations
                .get(INGRESS_CLASS_ANNOTATION)
                .map(String::as_str)
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IngressTls {
    pub hosts: Vec<String>,
    pub secret_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IngressRule {
    /// `None` matches every host.
    pub host: Option<String>,
    pub paths: Vec<IngressPath>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IngressPath {
    /// Kubernetes defaults a missing path to `/` for Prefix; kept as given here.
    pub path: Option<String>,
    pub path_type: PathType,
    pub backend: IngressBackend,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum PathType {
    Exact,
    Prefix,
    ImplementationSpecific,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum IngressBackend {
    Service {
        name: String,
        port: ServicePortRef,
    },
    /// A `resource` backend (apiGroup, kind, name). hawser serves Services only.
    Resource {
        kind: String,
        name: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ServicePortRef {
    Number(i32),
    Name(String),
}

impl std::fmt::Display for ServicePortRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServicePortRef::Number(n) => write!(f, "{n}"),
            ServicePortRef::Name(name) => f.write_str(name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IngressClass {
    pub name: String,
    /// `spec.controller`, e.g. `hawser.dev/ingress-controller`.
    pub controller: String,
    pub is_default: bool,
}
