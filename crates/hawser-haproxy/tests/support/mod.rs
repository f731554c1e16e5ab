//! Shared by the tests that run the real HAProxy.

#![allow(dead_code, reason = "each test crate uses a subset of these helpers")]

pub mod certs;
pub mod fake_socket;
pub mod running;

use std::{fs, path::Path};

use hawser_haproxy::{HAPROXY_ENV, HaproxyBinary};
use tempfile::TempDir;

/// The HAProxy named by `HAWSER_HAPROXY`; panics (never skips) without one,
/// because CI always provides it.
pub fn real_haproxy() -> HaproxyBinary {
    let Some(path) = std::env::var_os(HAPROXY_ENV) else {
        panic!(
            "{HAPROXY_ENV} is not set: these tests need a real HAProxy >= 3.0; \
             run `export {HAPROXY_ENV}=$(scripts/install-haproxy.sh)` and try again"
        );
    };
    HaproxyBinary::at(&path).unwrap_or_else(|error| {
        panic!(
            "{HAPROXY_ENV}={} is not usable: {error}",
            Path::new(&path).display()
        )
    })
}

/// A staged tree holding `files` (relative path, contents).
pub fn tree(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().expect("failed to create a temporary tree");
    for (path, contents) in files {
        let path = dir.path().join(path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("failed to create a tree directory");
        }
        fs::write(&path, contents).expect("failed to write a tree file");
    }
    dir
}
