//! hawser's controller: the sources, the render cycle, the gate and the
//! fleet that pushes each render to the agents.
//!
//! ```text
//!  manifests directory (local::run_local) ─┐
//!  cluster watchers (cluster::run_kube) ──────┴─► RenderCycle: render ──► gate (quarantine) ──► Deliver
//!                                                                                   │
//!      in-process agent (hawser run) or fleet ──► agents over mutual TLS ◄──────────┘
//!  status: gateway_status, cluster::status (Ingress), cluster::events (the admin page and
//!  metrics are the binary's: it composes this crate and the agent's)
//!  webhook: review candidates against the newest snapshot
//!  --config FILE ──config_file::ConfigFile──► RenderConfig + validation tests
//!  render + tests ──proof::run_validation_tests──► TestReport
//!                   (a private HAProxy, an echo backend per used Service)
//! ```
//!
//! Each source turns Kubernetes objects (k8s-openapi types) into the model's
//! trimmed views with hawser-k8s's `FromK8s` conversions and fills a
//! [`hawser_model::Store`]; what a source cannot use is reported, not fatal.
//!
//! It must not depend on the agent crate or the binary: the binary composes
//! the roles (the in-process agent of `hawser run` is a [`cycle::Deliver`]
//! it provides). `tests/suite/crate_graph.rs` in the binary enforces the graph.

pub mod addresses;
pub mod cluster;
pub mod coalesce;
pub mod config_file;
pub mod cycle;
pub mod fleet;
pub mod gate;
pub mod gateway_status;
pub mod local;
pub mod proof;
pub mod quarantine;
#[cfg(test)]
mod test_store;
mod tree;
pub mod webhook;

pub use config_file::{ConfigFile, ConfigFileError};
pub use proof::{
    Answer, TestFailure, TestOutcome, TestReport, ValidationTestError, run_validation_tests,
};
pub use tree::write_tree;
