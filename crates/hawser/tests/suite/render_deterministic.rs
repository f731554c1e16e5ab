//! `hawser render` is deterministic: the same input rendered again into the
//! same directory gives a byte-identical tree (the default certificate an
//! earlier render left is served again); a default certificate that cannot be
//! served is replaced, with a message; one named by `settings.defaultCertificate`
//! makes the output identical in any directory (manifests: `examples/demo`).
//!
//! Oracle: the tree on disk, compared file by file (path, mode and bytes).

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use support::{render, repository_dir};

const DEFAULT_PEM: &str = "certs/default.pem";

fn demo() -> PathBuf {
    repository_dir().join("examples/demo")
}

/// Every file under `dir`: its path relative to `dir`, mode and content.
fn tree(dir: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in fs::read_dir(&current).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(dir).expect("inside");
            let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
            let content = fs::read(&path).expect("read");
            files.insert(relative.to_string_lossy().into_owned(), (mode, content));
        }
    }
    files
}

/// Renders `examples/demo` into `out` and returns the tree and stderr.
fn render_demo(out: &Path, config: Option<&Path>) -> (BTreeMap<String, (u32, Vec<u8>)>, String) {
    let finished = render(&demo(), out, config);
    assert!(finished.status.success(), "{}", finished.output());
    (tree(out), finished.stderr)
}

#[test]
fn rendering_again_into_the_same_directory_changes_no_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let (first, _) = render_demo(&out, None);
    assert!(first.contains_key(DEFAULT_PEM), "{:?}", first.keys());
    let (second, stderr) = render_demo(&out, None);
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>()
    );
    for (path, file) in &first {
        assert!(second[path] == *file, "{path} changed between two renders");
    }
    assert!(!stderr.contains("is not reused"), "{stderr}");
}

#[test]
fn a_corrupt_default_certificate_is_replaced_and_said_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    render_demo(&out, None);
    let garbage = b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n";
    fs::write(out.join(DEFAULT_PEM), garbage).expect("corrupt");
    let (replaced, stderr) = render_demo(&out, None);
    assert!(
        stderr.contains("default.pem is not reused") && stderr.contains("generated"),
        "{stderr}"
    );
    let pem = &replaced[DEFAULT_PEM].1;
    assert_ne!(pem.as_slice(), garbage.as_slice());
    let text = String::from_utf8_lossy(pem);
    assert!(
        text.starts_with("-----BEGIN CERTIFICATE-----") && text.contains("PRIVATE KEY-----"),
        "{text}"
    );
    // The replacement is kept from then on.
    let (again, stderr) = render_demo(&out, None);
    assert_eq!(again, replaced);
    assert!(!stderr.contains("is not reused"), "{stderr}");
}

#[test]
fn a_default_certificate_named_by_the_settings_gives_the_same_tree_anywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("hawser.yaml");
    fs::write(&config, "settings:\n  defaultCertificate: shop/shop-tls\n").expect("config");
    let (a, _) = render_demo(&dir.path().join("a"), Some(&config));
    let (b, _) = render_demo(&dir.path().join("b"), Some(&config));
    assert_eq!(a, b, "two fresh directories differ");
}
