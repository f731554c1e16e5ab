//! The typed, trimmed resource store that every render reads.
//!
//! ```text
//!  k8s-openapi object ──from_k8s──► trimmed view ──► Store (indexed)
//!  (API server watch or manifests dir)               │
//!                                                    └──► hawser-render
//! ```
//!
//! Views keep only the fields templates and routing use, so a cluster's worth of
//! objects stays small in memory. Nothing here does I/O or talks to Kubernetes:
//! sources (the manifests directory, kube-rs watchers) convert their objects with
//! [`Object::from_k8s`] style constructors and feed the [`Store`].

mod convert;
mod endpoints;
mod ingress;
mod key;
mod resources;
mod secret;
mod service;
mod store;

pub use convert::ConvertError;
pub use endpoints::{Endpoint, EndpointPort, EndpointSlice, SERVICE_NAME_LABEL};
pub use ingress::{
    INGRESS_CLASS_ANNOTATION, IS_DEFAULT_CLASS_ANNOTATION, Ingress, IngressBackend, IngressClass,
    IngressPath, IngressRule, IngressTls, PathType, ServicePortRef,
};
pub use key::{Kind, ObjectKey, ObjectRef};
pub use resources::ExtraResources;
pub use secret::Secret;
pub use service::{ANNOTATION_PREFIX, Service, ServicePort, ServiceType};
pub use store::{Object, Store};
