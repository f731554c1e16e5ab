//! hawser-agent: applies rendered versions to HAProxy without ever leaving it
//! on a configuration it cannot load.
//!
//! ```text
//!  desired (generation, files, plan)
//!      │
//!      ▼
//!  tree: stage v<gen> (fsync, MANIFEST) ──► check_staged_tree in place ──► decide
//!      │                                                                       │
//!      │   runtime: publish current → v<gen>, then runtime API operations ◄────┤
//!      │   reload:  publish, save server state, paced reload, verify ◄─────────┘
//!      ▼
//!  lkg → v<gen>            on failure: current → lkg first, then report HAProxy's words
//! ```
//!
//! The invariants this crate holds are listed in `docs/agent.md`.
//!
//! It reads versions through the contract (`hawser-plan`: plan, file set,
//! generation, digest, plan formats) and validates them with
//! `hawser-haproxy`. It must not depend on the renderer, the model or any
//! Kubernetes crate: an agent runs what it is sent, it never renders.

mod agent;
mod bootstrap;
pub mod control;
pub mod diff;
mod drift;
mod paths;
pub mod process;
mod reload;
mod runtime_ops;
mod served;
mod status;
pub mod tree;

pub use agent::{Agent, AgentConfig, AgentError, AgentHandle, Desired, HaproxyMode};
pub use diff::{Decision, RuntimeOp, VersionView, decide};
pub use paths::AgentPaths;
pub use process::{ExitInfo, HaproxyLayout, ProcessError, Started, StopMode, Supervisor};
pub use reload::ReloadError;
pub use served::{ServedBackend, ServedBackends};
pub use status::{AgentStatus, ApplyKind, ApplyOutcome, Phase, RecentOutcomes};
pub use tree::{Manifest, TreeError, TreeStore, VersionName};
