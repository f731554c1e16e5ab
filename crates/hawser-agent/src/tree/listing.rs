//! Reading a tree another process writes, without changing it: which
//! versions `current`, `lkg` and `loaded` name, and what a version's
//! MANIFEST lists, with each file's size on disk.
//!
//! For tools beside a running agent (`hawser support-bundle`):
//! [`TreeStore::open`] creates the base and removes staging directories,
//! which only the tree's owner may do. Nothing here reads a file's content
//! other than MANIFEST, so no certificate or key leaves the tree this way.

use std::fs;
use std::path::PathBuf;

use hawser_plan::FileKind;

use super::{MANIFEST, Manifest, TreeError, TreeStore, VersionName, io_err, plain_relative};

/// One file of a version, as its MANIFEST lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    /// The path inside the version, as HAProxy reads it (`certs/a.pem`).
    pub path: String,
    pub kind: FileKind,
    /// Bytes on disk; `None` when the file cannot be looked at (a damaged
    /// version: [`TreeStore::verify`] says more).
    pub size: Option<u64>,
    /// Lowercase hex SHA-256 of the content, from the MANIFEST.
    pub digest: String,
}

/// What a version's MANIFEST lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionListing {
    pub version: VersionName,
    /// Digest of the version's PLAN.
    pub plan: String,
    /// Sorted by path.
    pub files: Vec<ListedFile>,
}

impl TreeStore {
    /// A store over an existing `base`, for reading only: unlike
    /// [`TreeStore::open`], nothing is created or removed.
    pub fn inspect(base: impl Into<PathBuf>) -> Result<Self, TreeError> {
        let base = base.into();
        let meta = fs::metadata(&base).map_err(io_err("cannot read", &base))?;
        if !meta.is_dir() {
            return Err(TreeError::Io {
                action: "cannot read",
                path: base,
                source: std::io::Error::other("not a directory"),
            });
        }
        Ok(TreeStore { base })
    }

    /// A version's MANIFEST, parsed; no other file is read.
    pub fn manifest(&self, version: VersionName) -> Result<Manifest, TreeError> {
        let path = self.version_path(version).join(MANIFEST);
        let text = fs::read_to_string(&path).map_err(io_err("cannot read", &path))?;
        Manifest::parse(&text).ok_or_else(|| TreeError::Damaged {
            version,
            reason: "MANIFEST does not parse".to_string(),
        })
    }

    /// A version's MANIFEST with each file's size (its metadata only).
    pub fn listing(&self, version: VersionName) -> Result<VersionListing, TreeError> {
        let manifest = self.manifest(version)?;
        let dir = self.version_path(version);
        let files = manifest
            .files
            .into_iter()
            .map(|(path, entry)| {
                let size = plain_relative(&path)
                    .ok()
                    .and_then(|relative| fs::symlink_metadata(dir.join(relative)).ok())
                    .map(|meta| meta.len());
                ListedFile {
                    path,
                    kind: entry.kind,
                    size,
                    digest: entry.digest,
                }
            })
            .collect();
        Ok(VersionListing {
            version,
            plan: manifest.plan,
            files,
        })
    }
}

#[cfg(test)]
mod tests {
    use hawser_plan::{FileSet, Plan};

    use super::*;

    #[test]
    fn lists_a_version_with_sizes_and_changes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("tree");
        let owner = TreeStore::open(&base).expect("open");
        let mut files = FileSet::default();
        files.insert("haproxy.cfg", FileKind::Config, "global\n");
        files.insert("certs/a.pem", FileKind::Certificate, "secret");
        let v = owner.stage(3, &files, &Plan::default()).expect("stage");
        owner.publish(v).expect("publish");
        // A writer's staging directory, which only the owner may remove.
        fs::create_dir(base.join("staging.4.1")).expect("staging");

        let reader = TreeStore::inspect(&base).expect("inspect");
        assert_eq!(reader.current(), Some(v));
        let listing = reader.listing(v).expect("listing");
        let cert = &listing.files[0];
        assert_eq!(
            (cert.path.as_str(), cert.kind, cert.size),
            ("certs/a.pem", FileKind::Certificate, Some(6))
        );
        assert_eq!(cert.digest, hawser_plan::digest(b"secret"));
        assert_eq!(listing.files[1].path, "haproxy.cfg");
        assert!(base.join("staging.4.1").is_dir());
    }

    #[test]
    fn inspecting_a_missing_tree_creates_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("tree");
        assert!(TreeStore::inspect(&base).is_err());
        assert!(!base.exists());
    }
}
