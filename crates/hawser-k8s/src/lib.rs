//! hawser's Kubernetes adapter: Kubernetes objects, from the API server or
//! from manifest files, into the model's trimmed views.
//!
//! ```text
//!  cluster watchers ──k8s-openapi / gateway-api object──► FromK8s::from_k8s ──► view
//!  manifests dir ──load_dir: YAML/JSON documents ──────────┘        │
//!                                                                   ▼
//!                                     ManifestSet { Store, problems } / the caller's Store
//! ```
//!
//! It owns the conversions ([`FromK8s`], one impl per view, and
//! [`ConvertError`]) and the manifests-directory loader ([`load_dir`]). It is
//! the only hawser crate below the controller that names a Kubernetes crate,
//! so `hawser-model` stays plain domain types. It must not know rendering
//! (templates, HAProxy files) or sockets: it reads files and converts values,
//! nothing more.

mod convert;
mod manifests;

pub use convert::{ConvertError, FromK8s};
pub use manifests::{
    ManifestError, ManifestReader, ManifestSet, Placement, Problem, ProblemKind, is_manifest,
    load_dir, placement,
};
