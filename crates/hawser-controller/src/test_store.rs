//! Unit tests' stores written as manifests: one YAML text, loaded as the
//! manifests source loads a directory.

use std::fs;

use hawser_model::Store;

/// The store of one manifests file holding `yaml`, which must read without
/// a problem (unit tests of what renders from manifests).
#[allow(clippy::unwrap_used, reason = "tests")]
pub(crate) fn store_of(yaml: &str) -> Store {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("all.yaml"), yaml).unwrap();
    let set = hawser_k8s::load_dir(dir.path()).unwrap();
    assert!(set.problems.is_empty(), "{:?}", set.problems);
    set.store
}
