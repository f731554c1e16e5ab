//! The typed, trimmed resource store that every render reads.
//!
//! ```text
//!  hawser-k8s: Kubernetes object ──FromK8s──► trimmed view ──► Store (indexed)
//!  (API server watch or manifests dir)                          │
//!                                                               └──► hawser-render
//! ```
//!
//! Views keep only the fields templates and routing use, so a cluster's worth of
//! objects stays small in memory. This crate is pure domain types: nothing here
//! does I/O, and it depends on no Kubernetes crate (k8s-openapi, gateway-api,
//! kube). The Kubernetes adapter, `hawser-k8s`, converts the API objects
//! sources read (the manifests directory, the cluster watchers) into these
//! views, which feed the [`Store`].

mod config_map;
mod endpoints;
mod gateway;
mod grpc_route;
mod http_route;
mod ingress;
mod key;
mod reference_grant;
mod resources;
mod route;
mod secret;
mod service;
mod store;
mod stream_route;

pub use config_map::ConfigMap;
pub use endpoints::{Endpoint, EndpointPort, EndpointSlice, SERVICE_NAME_LABEL};
pub use gateway::{
    AllowedRoutes, CertificateRef, Gateway, GatewayAddress, GatewayClass, LabelOperator,
    LabelRequirement, LabelSelector, Listener, ListenerTls, RouteGroupKind, RouteNamespaces,
    TlsMode,
};
pub use grpc_route::{GrpcMethodMatch, GrpcRoute, GrpcRouteMatch, GrpcRouteRule};
pub use http_route::{
    HeaderModifier, HttpBackendRef, HttpFilter, HttpRoute, HttpRouteMatch, HttpRouteRule,
    HttpTimeouts, MirrorFraction, PathMatch, PathMatchKind, PathModifier, RequestMirror,
    RequestRedirect, UrlRewrite, ValueMatch, ValueMatchKind,
};
pub use ingress::{
    INGRESS_CLASS_ANNOTATION, IS_DEFAULT_CLASS_ANNOTATION, Ingress, IngressBackend, IngressClass,
    IngressPath, IngressRule, IngressTls, PathType, ServicePortRef,
};
pub use key::{GATEWAY_API_GROUP, Kind, ObjectKey, ObjectRef};
pub use reference_grant::{GrantFrom, GrantTo, NAMESPACE_NAME_LABEL, Namespace, ReferenceGrant};
pub use resources::ExtraResources;
pub use route::{BackendRef, ParentRef, RouteMeta};
pub use secret::Secret;
pub use service::{
    ANNOTATION_PREFIX, SERVICE_ANNOTATION_PREFIXES, Service, ServicePort, ServiceType,
};
pub use store::{Object, Store};
pub use stream_route::{StreamRouteRule, TcpRoute, TlsRoute};
