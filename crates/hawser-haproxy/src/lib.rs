//! HAProxy process tooling: find the binary, read its version, validate a
//! staged configuration tree with `haproxy -c`, and drive the running
//! HAProxy through its master CLI and runtime API.
//!
//! ```text
//!  HAWSER_HAPROXY / PATH ──locate──► HaproxyBinary { path, version >= 3.0 }
//!                                        │
//!  staged tree (haproxy.cfg, maps/, certs/) ──check──► CheckReport (warnings)
//!                                        │          or HaproxyError::CheckFailed
//!                                        ▼             { output, file, line }
//!                               haproxy -c -C <tree> -f <config>
//! ```
//!
//! [`HaproxyBinary::check_staged_tree`] is the one validation of a staged tree
//! the controller's gate and the agent both run: the config policy, `haproxy
//! -c` in its sandbox, then the checks `-c` does not make ([`check_global`]),
//! with the line at fault blamed on its culprit ([`StagedTreeError`]).
//!
//! This crate knows HAProxy, not what hawser renders: it must not depend on
//! templates, the plan or any Kubernetes crate. The culprit comes from a
//! [`CulpritNamer`] the caller gives the policy.
//!
//! The check runs with `-C <tree>` so relative paths in the configuration
//! (`maps/hosts.map`, `certs/`) resolve inside the staged tree exactly as they
//! will when HAProxy loads it for real.
//!
//! The running HAProxy is driven through two sockets, one command per session:
//!
//! ```text
//!  MasterCli  ──► master CLI (-S)        reload, show proc, show startup-logs
//!  RuntimeApi ──► worker stats socket    servers, maps, certificates, show info
//! ```
//!
//! [`SoftStop`] stops a running master from outside (the pod's preStop
//! hook): SIGUSR1, a bounded drain, then SIGTERM.
//!
//! Both compare every reply with the exact success text of HAProxy 3.0 and
//! report anything else as [`SocketError::Rejected`] with HAProxy's words.

mod binary;
mod check;
mod checks;
mod cli;
mod error;
mod master;
mod policy;
mod runtime;
pub mod sandbox;
mod socket_error;
mod staged;
mod stop;
mod version;

pub use binary::{DEFAULT_CHECK_TIMEOUT, HAPROXY_ENV, HaproxyBinary};
pub use check::CheckReport;
pub use checks::{AccountFiles, CheckError, check_global};
pub use cli::DEFAULT_COMMAND_TIMEOUT;
pub use error::HaproxyError;
pub use master::{DEFAULT_RELOAD_TIMEOUT, MasterCli, Proc, ProcTable, ReloadReply};
pub use policy::{
    ConfigPolicy, CulpritNamer, PolicyError, Reason as PolicyReason, Refusal, TreeDir, TreeFiles,
};
pub use runtime::{
    AdminState, CommandBatch, CrtListEntry, DEFAULT_MAX_COMMAND_BYTES, MapInfo, RuntimeApi,
    ServerState, SslCertDetails, SslCertList, StatRow, Stats, TableEntry, WaitOutcome,
};
pub use socket_error::SocketError;
pub use staged::StagedTreeError;
pub use stop::{SoftStop, StopError, StopOutcome};
pub use version::Version;
