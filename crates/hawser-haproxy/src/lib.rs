//! HAProxy process tooling: find the binary, read its version, validate a
//! staged configuration tree with `haproxy -c`.
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
//! The check runs with `-C <tree>` so relative paths in the configuration
//! (`maps/hosts.map`, `certs/`) resolve inside the staged tree exactly as they
//! will when HAProxy loads it for real. The master CLI and runtime API client
//! will live here too.

mod binary;
mod check;
mod error;
mod version;

pub use binary::{DEFAULT_CHECK_TIMEOUT, HAPROXY_ENV, HaproxyBinary};
pub use check::CheckReport;
pub use error::HaproxyError;
pub use version::Version;
