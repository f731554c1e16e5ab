//! hawser's controller: where the objects hawser renders from come from, and
//! how they reach the store.
//!
//! ```text
//!  manifests directory ──manifests::load_dir──► ManifestSet { Store, problems }
//!  (cluster watchers: later)                         │
//!                                                    └──► render loop (later)
//!  --config FILE ──config_file::ConfigFile──► RenderConfig + validation tests
//!  render + tests ──validation_tests::run_validation_tests──► TestReport
//!                   (a private HAProxy, an echo backend per used Service)
//! ```
//!
//! Each source turns Kubernetes objects (k8s-openapi types) into the model's
//! trimmed views with their `from_k8s` conversions and fills a
//! [`hawser_model::Store`]; what a source cannot use is reported, not fatal.

pub mod addresses;
pub mod admin;
pub mod config_file;
pub mod fleet;
pub mod gate;
pub mod gateway_status;
pub mod kube;
pub mod local;
pub mod manifests;
pub mod metrics;
pub mod quarantine;
mod tree;
pub mod validation_tests;
pub mod webhook;

pub use config_file::{ConfigFile, ConfigFileError};
pub use manifests::{ManifestError, ManifestSet, Problem, ProblemKind, load_dir};
pub use tree::write_tree;
pub use validation_tests::{
    Answer, TestFailure, TestOutcome, TestReport, ValidationTestError, run_validation_tests,
};
