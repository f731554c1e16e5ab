//! Secret-shaped storage for the PKI: named Secrets, each a map of keys to bytes.
//!
//! ```text
//! renew/check ──read(name)──▶ SecretStore ─┬▶ DirStore: <root>/<name> -> .<name>-<rev>/{tls.crt,tls.key,...}
//!             ──write(name)─▶             └▶ KubeSecretStore: Secret <namespace>/<name>, compare-and-swap
//! ```
//!
//! [`DirStore`] replaces a whole Secret atomically: it writes a fresh revision directory,
//! fsyncs it, then renames a symlink over `<root>/<name>` (the way a Kubernetes Secret
//! volume swaps `..data`), so a reader or a crash never sees half of a Secret.
//! [`KubeSecretStore`] writes only over the version it read, so two runs never overwrite
//! each other: the second gets [`StoreError::Conflict`].

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

mod kubernetes;

pub use kubernetes::{COMPONENT_LABEL, KubeSecretStore, MANAGED_BY_LABEL};

/// The keys of one Secret and their bytes. `Debug` prints key names only, never values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretData(pub BTreeMap<String, Vec<u8>>);

impl SecretData {
    /// The bytes stored under `key`, if any.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.get(key).map(Vec::as_slice)
    }

    /// Stores `value` under `key`, replacing any previous value.
    pub fn insert(&mut self, key: &str, value: impl Into<Vec<u8>>) {
        self.0.insert(key.to_owned(), value.into());
    }
}

impl fmt::Debug for SecretData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// A failure to read or write a Secret.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The Secret or key name cannot be used as a file name.
    #[error("invalid name {name:?}: must be non-empty, without '/' and not start with '.'")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// Reading the Secret failed.
    #[error("failed to read secret {name}: {source}")]
    Read {
        /// The Secret name.
        name: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Writing the Secret failed.
    #[error("failed to write secret {name}: {source}")]
    Write {
        /// The Secret name.
        name: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Another writer changed (or created) the Secret after this run read it; nothing was
    /// overwritten.
    #[error("another `hawser certs` run changed secret {name}; rerun — the next run resumes")]
    Conflict {
        /// The Secret name.
        name: String,
    },
    /// The Kubernetes API failed or refused a request on a Secret.
    #[error("failed to {action} secret {namespace}/{name}")]
    Api {
        /// `read` or `write`.
        action: &'static str,
        /// The Secret's namespace.
        namespace: String,
        /// The Secret name.
        name: String,
        /// The client's error (an API `Status`, or the connection's); boxed, it is large.
        #[source]
        source: Box<kube::Error>,
    },
    /// No Kubernetes client could be configured (no in-cluster service account, no kubeconfig).
    #[error("failed to configure a kubernetes client")]
    Connect {
        /// The client's error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The store was called where it cannot wait for the Kubernetes API.
    #[error("cannot wait for the kubernetes api to {what}: {reason}")]
    Blocking {
        /// What was to be done (`read secret NS/NAME`).
        what: String,
        /// Why, and what to do instead.
        reason: &'static str,
    },
}

impl StoreError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidName { .. } => "invalid_name",
            Self::Read { .. } => "read",
            Self::Write { .. } => "write",
            Self::Conflict { .. } => "conflict",
            Self::Api { action, .. } => action,
            Self::Connect { .. } => "connect",
            Self::Blocking { .. } => "blocking",
        }
    }
}

/// Where Secrets live: [`DirStore`] (a local directory) or [`KubeSecretStore`].
///
/// Synchronous on purpose: the lifecycle is a short sequence of reads then writes whose
/// order matters (issuer first), and a local directory needs no runtime; the Kubernetes
/// store waits on its own runtime handle (see [`KubeSecretStore`]).
pub trait SecretStore {
    /// The Secret `name`, or `None` if it does not exist.
    fn read(&self, name: &str) -> Result<Option<SecretData>, StoreError>;
    /// Replaces the whole Secret `name` with `data`, atomically.
    fn write(&self, name: &str, data: &SecretData) -> Result<(), StoreError>;
}

/// A local directory of Secrets: one subdirectory per Secret, one file per key.
/// Private keys (`*.key`) are written with mode 0600, everything else 0644.
#[derive(Debug, Clone)]
pub struct DirStore {
    root: PathBuf,
}

static REVISION: AtomicU64 = AtomicU64::new(0);

impl DirStore {
    /// A store rooted at `root` (created on the first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory holding the Secrets.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn unique(&self, name: &str, kind: &str) -> PathBuf {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let n = REVISION.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        self.root.join(format!(".{name}-{kind}-{nanos}-{pid}-{n}"))
    }

    fn write_revision(&self, name: &str, data: &SecretData) -> io::Result<()> {
        fs::create_dir_all(&self.root)?;
        let revision = self.unique(name, "rev");
        fs::create_dir(&revision)?;
        for (key, value) in &data.0 {
            let mode = if key.ends_with(".key") { 0o600 } else { 0o644 };
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(revision.join(key))?;
            file.write_all(value)?;
            file.sync_all()?;
        }
        File::open(&revision)?.sync_all()?;

        let target = self.root.join(name);
        let previous = match fs::symlink_metadata(&target) {
            Ok(meta) if meta.file_type().is_symlink() => Some(fs::read_link(&target)?),
            Ok(_) => {
                // A plain directory (made by hand): move it aside before linking.
                let aside = self.unique(name, "old");
                fs::rename(&target, &aside)?;
                Some(aside)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let link = self.unique(name, "link");
        let file_name = revision
            .file_name()
            .ok_or_else(|| io::Error::other("revision has no file name"))?;
        symlink(file_name, &link)?;
        fs::rename(&link, &target)?;
        File::open(&self.root)?.sync_all()?;
        if let Some(previous) = previous {
            let previous = self.root.join(previous);
            if previous != revision {
                // Best effort: a leftover revision is harmless.
                let _ = fs::remove_dir_all(previous);
            }
        }
        Ok(())
    }
}

fn check_name(name: &str) -> Result<(), StoreError> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(StoreError::InvalidName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

impl SecretStore for DirStore {
    fn read(&self, name: &str) -> Result<Option<SecretData>, StoreError> {
        check_name(name)?;
        let err = |source| StoreError::Read {
            name: name.to_owned(),
            source,
        };
        let entries = match fs::read_dir(self.root.join(name)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        let mut data = SecretData::default();
        for entry in entries {
            let entry = entry.map_err(err)?;
            let key = entry.file_name().to_string_lossy().into_owned();
            if key.starts_with('.') || !entry.file_type().map_err(err)?.is_file() {
                continue;
            }
            data.insert(&key, fs::read(entry.path()).map_err(err)?);
        }
        Ok(Some(data))
    }

    fn write(&self, name: &str, data: &SecretData) -> Result<(), StoreError> {
        check_name(name)?;
        for key in data.0.keys() {
            check_name(key)?;
        }
        self.write_revision(name, data)
            .map_err(|source| StoreError::Write {
                name: name.to_owned(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn sample() -> SecretData {
        let mut data = SecretData::default();
        data.insert("tls.crt", "CERT");
        data.insert("tls.key", "SECRET-KEY");
        data
    }

    #[test]
    fn missing_secret_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(DirStore::new(dir.path()).read("absent").unwrap(), None);
    }

    #[test]
    fn write_then_read_round_trips_and_replaces_whole_secret() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(dir.path().join("store"));
        store.write("s", &sample()).unwrap();
        assert_eq!(store.read("s").unwrap(), Some(sample()));

        let mut next = SecretData::default();
        next.insert("ca.crt", "CA");
        store.write("s", &next).unwrap();
        assert_eq!(store.read("s").unwrap(), Some(next));
        // Only the link and its one revision remain.
        assert_eq!(fs::read_dir(store.root()).unwrap().count(), 2);
    }

    #[test]
    fn private_keys_are_0600() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(dir.path());
        store.write("s", &sample()).unwrap();
        let mode = |key: &str| {
            fs::metadata(dir.path().join("s").join(key))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("tls.key"), 0o600);
        assert_eq!(mode("tls.crt"), 0o644);
    }

    #[test]
    fn replaces_a_hand_made_directory() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("s")).unwrap();
        fs::write(dir.path().join("s/old"), "x").unwrap();
        let store = DirStore::new(dir.path());
        store.write("s", &sample()).unwrap();
        assert_eq!(store.read("s").unwrap(), Some(sample()));
    }

    #[test]
    fn debug_never_prints_values() {
        let shown = format!("{:?}", sample());
        assert!(shown.contains("tls.key") && !shown.contains("SECRET-KEY"));
    }

    #[test]
    fn rejects_path_like_names() {
        let store = DirStore::new("/nonexistent");
        for bad in ["", "../x", ".hidden", "a/b"] {
            assert!(matches!(
                store.read(bad),
                Err(StoreError::InvalidName { .. })
            ));
        }
    }
}
