//! hawser-plan: the contract between hawser's controller and its agents.
//!
//! ```text
//!  controller (render) ──► Generation + FileSet + Plan ──► wire: entries by digest,
//!                                                           blobs, plan in PLAN_FORMAT
//!                                                                   │
//!  agent ◄── decode(plan_format, blob) ◄────────────────────────────┘
//!    └─► stage the files at their tree paths, check, apply by the plan
//! ```
//!
//! It owns what both roles must agree on and nothing else:
//!
//! - [`Plan`]: a render's structure (backends, servers, maps, certificates,
//!   crt-lists) stated as data, so the agent decides between runtime API
//!   operations and a reload without parsing HAProxy text;
//! - [`FileSet`] and [`FileKind`]: every file of one version by relative path,
//!   and the tree paths both sides use ([`CONFIG_PATH`] and the others);
//! - [`Generation`] and [`digest`]: how versions and contents are named;
//! - [`culprit_at`]: which object or snippet a configuration line came from;
//! - [`builtin_lua_digests`]: the Lua hawser's own library writes, embedded
//!   here so the agent trusts it without the renderer;
//! - the plan's wire format ([`PLAN_FORMAT`], [`encode`], [`decode`]): the plan
//!   travels as one blob, JSON of [`Plan`] (format 2; see the `format`
//!   module); an agent refuses a format it does not know, naming both, so a
//!   newer controller and an older agent can tell they disagree.
//!
//! It must not depend on any other hawser crate: the agent links it without
//! the renderer, templates or any Kubernetes crate.

mod builtin_lua;
mod counters;
mod culprit;
mod digest;
mod files;
mod format;
mod generation;
mod paths;
mod plan;

pub use builtin_lua::{AUTH_LUA, MIRROR_LUA, builtin_lua_digests};
pub use counters::{RESPONSE_CLASSES, ROUTES_TABLE};
pub use culprit::culprit_at;
pub use digest::digest;
pub use files::{FileKind, FileSet, RenderedFile};
pub use format::{
    Decoded, Earlier, Encoded, PLAN_FORMAT, PlanFormatError, decode, decode_after, encode,
    encode_after, reads_format,
};
pub use generation::Generation;
pub use paths::{
    AUTH_LUA_PATH, CONFIG_PATH, CRT_LIST_PATH, DEFAULT_CERT_PATH, GATEWAY_MAP_PATH,
    GATEWAY_TWIN_MAP_PATH, LIVE_TWINS_MAP_PATH, MIRROR_LUA_PATH, REGEX_ROUTES_MAP_PATH,
    ROUTES_MAP_PATH, ROUTES_TWIN_MAP_PATH, SPARES_MAP_PATH,
};
pub use plan::{
    BackendMode, BackendPlan, BackendRole, BackendShape, CertificatePlan, CrtListEntry,
    CrtListPlan, MapEntry, MapPlan, MatchKind, Plan, ServerPlan, ServerState, ServicePort,
};
