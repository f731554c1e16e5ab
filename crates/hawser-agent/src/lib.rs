//! hawser-agent: applies rendered versions to HAProxy safely.
//!
//! ```text
//!  desired (generation, files, plan)
//!      │
//!      ▼
//!  tree: stage v<gen> (fsync, MANIFEST) ──► check ──► publish current → v<gen>
//!                                                        │
//!                                   runtime ops or reload + verify ──► lkg → v<gen>
//!                                                        │ failure
//!                                                        └──► current → lkg
//! ```

pub mod checks;
pub mod diff;
pub mod tree;

pub use diff::{Decision, RuntimeOp, VersionView, decide};
pub use tree::{Generation, Manifest, TreeError, TreeStore, VersionName};
