//! hawser-render: Kubernetes objects in, HAProxy configuration out.
//!
//! ```text
//!  Store ──► ingress (classes, validation, precedence) ──► RouteTable
//!    │        features (hawser.dev/ annotations → IngressFeatures, BackendFeatures)
//!    └────► gateway (classes, listeners, attachment) ──► GatewayTable + GatewayStatus
//!           gateway_frontends (the table as the `gateway` library reads it)
//!              │                                              │
//!              ├─► backends (Service port + EndpointSlices) ──┼─► Plan ──► templates ──► haproxy.cfg
//!              └─► tls (Secrets → PEM, crt-list) ─────────────┘     └──────────────────► maps, certs, crt-list
//! ```
//!
//! What an Ingress or Service asks beyond routing (redirects, access lists,
//! authentication, limits, CORS, rewrites, backend protocols) is one typed
//! model, [`features`], fed by annotation dialects and read by the library
//! templates; its values live in maps wherever HAProxy can change them at
//! runtime (`docs/annotations.md`).
//!
//! A render is deterministic: the same store and configuration give the same
//! bytes and plan. Only warnings may also depend on the time (a certificate
//! expired or not yet valid, checked against the renderer's clock): the
//! clock never rejects anything. It never fails because of one object: a
//! bad object is rejected with a [`Diagnostic`] naming it and the rest
//! renders. It fails only when the
//! configuration or a template is wrong ([`RenderError`]).
//!
//! The [`Plan`] states the render's structure (backends, servers, maps,
//! certificates, crt-lists) so the agent can decide between runtime changes and
//! a reload without parsing HAProxy text. The plan, the file set and the tree
//! paths are the contract's (`hawser-plan`), re-exported here; this crate
//! must not depend on a Kubernetes client, sockets or the agent.

mod backends;
mod config;
mod engine;
mod fault;
pub mod features;
mod gateway;
mod gateway_frontends;
mod ingress;
mod library;
mod pools;
mod render;
mod report;
mod route_key;
mod tcp_services;
mod tls;
pub mod validate;

pub use backends::{BALANCE_ANNOTATION, BackendKey, TIMEOUT_SERVER_ANNOTATION};
pub use config::{
    AGENT_SETTINGS, AccessLogFormat, ConfigError, INGRESS_CONTROLLER, RenderConfig, Settings,
    TemplateConfig, Timeouts,
};
pub use fault::{Fault, fault_of};
pub use gateway::{
    BackendTarget, ClassStatus, Condition, ConditionStatus, FilterEntry, GATEWAY_CONTROLLER,
    GatewayEntry, GatewayObjectStatus, GatewayRouting, GatewayStatus, GatewayTable, GrpcRuleEntry,
    HttpRuleEntry, ListenerEntry, ListenerProtocol, ListenerStatus, ListenerTlsEntry, MirrorEntry,
    RouteParentStatus, RouteStatus, TcpRouteEntry, TlsRouteEntry, WeightedBackend, condition,
    gateway_routing,
};
/// The contract types a render produces, re-exported so render's users
/// need not name `hawser_plan` for them.
pub use hawser_plan::{
    BackendMode, BackendPlan, BackendRole, BackendShape, CertificatePlan, CrtListEntry,
    CrtListPlan, FileKind, FileSet, MapEntry, MapPlan, MatchKind, Plan, RenderedFile, ServerPlan,
    ServerState, builtin_lua_digests, culprit_at,
};
pub use library::{ENTRY_TEMPLATE, EXTENSION_POINTS, LIBRARY};
pub use pools::{LentTo, MAX_SPARES, SPARE_SOURCE, SpareStatus};
pub use render::{
    CONFIG_PATH, NOT_FOUND_BACKEND, ROUTE_KEY_END, ROUTES_MAP_PATH, RenderError, Rendered, Renderer,
};
pub use report::{Diagnostic, Severity};
pub use tls::{
    CRT_LIST_PATH, CertificatePem, CertificateWarning, DEFAULT_CERT_PATH, ServedCertificate,
    ServedCertificates, generate_default_certificate,
};
