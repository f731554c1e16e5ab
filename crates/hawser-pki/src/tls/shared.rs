//! [`SharedMaterial`]: the current material of one tls directory, swapped whole while
//! connections read it, with the last load error kept for `/status`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use serde::Serialize;
use tokio::sync::watch;

use super::error::TlsError;
use super::material::Material;
use crate::lifecycle::rfc3339;

/// A cheap-to-clone handle on the current material of one tls directory. Readers take an
/// `Arc` snapshot per use, so a swap never changes material under a handshake.
#[derive(Debug, Clone)]
pub struct SharedMaterial {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    dir: PathBuf,
    current: watch::Sender<Option<Arc<Material>>>,
    error: Mutex<LastError>,
}

#[derive(Debug, Default)]
struct LastError {
    message: Option<String>,
    at: Option<SystemTime>,
    /// The message last logged: each distinct error is logged once, not on every poll.
    warned: Option<String>,
}

/// What `/status` shows about a tls directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsStatus {
    /// The tls directory.
    pub dir: String,
    /// The loaded revision (SHA-256 hex), if any is valid.
    pub revision: Option<String>,
    /// The loaded identity's notAfter, RFC 3339.
    pub not_after: Option<String>,
    /// SHA-256 (hex) of the loaded `ca.crt` certificates.
    pub ca_fingerprints: Vec<String>,
    /// The end of trust in the previous CA, RFC 3339, during a rotation.
    pub previous_ca_until: Option<String>,
    /// Why the latest load failed; `None` once a load succeeds again.
    pub last_error: Option<String>,
    /// When it failed, RFC 3339.
    pub last_error_at: Option<String>,
}

impl SharedMaterial {
    /// An empty cell for the tls directory `dir`: no material until [`set`](Self::set).
    pub fn new(dir: impl Into<PathBuf>) -> SharedMaterial {
        SharedMaterial {
            inner: Arc::new(Inner {
                dir: dir.into(),
                current: watch::Sender::new(None),
                error: Mutex::new(LastError::default()),
            }),
        }
    }

    /// A cell already holding `material` (its directory becomes the cell's).
    pub fn with(material: Material) -> SharedMaterial {
        let shared = SharedMaterial::new(material.dir());
        shared.set(material);
        shared
    }

    pub(super) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    pub(super) fn upgrade(inner: &std::sync::Weak<Inner>) -> Option<SharedMaterial> {
        inner.upgrade().map(|inner| SharedMaterial { inner })
    }

    /// The tls directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The current valid material, if any.
    pub fn current(&self) -> Option<Arc<Material>> {
        self.inner.current.borrow().clone()
    }

    /// Installs a valid `material` and clears the recorded error. Swaps (and notifies
    /// subscribers) only when its revision differs from the current one; returns whether
    /// it swapped.
    pub fn set(&self, material: Material) -> bool {
        *self.lock_error() = LastError::default();
        self.inner.current.send_if_modified(|current| {
            if current
                .as_ref()
                .is_some_and(|c| c.revision() == material.revision())
            {
                return false;
            }
            tracing::info!(
                dir = %self.inner.dir.display(),
                revision = material.revision(),
                not_after = %rfc3339(material.not_after()),
                "loaded tls material"
            );
            *current = Some(Arc::new(material));
            true
        })
    }

    /// Records that loading failed at `at`, keeping the last valid material. Logs a
    /// warning the first time each distinct error is seen; returns whether it did.
    pub fn record_error(&self, error: &TlsError, at: SystemTime) -> bool {
        let message = error.to_string();
        let mut last = self.lock_error();
        last.at = Some(at);
        last.message = Some(message.clone());
        if last.warned.as_ref() == Some(&message) {
            return false;
        }
        let keeping = self.current().map(|m| m.revision().to_owned());
        tracing::warn!(
            dir = %self.inner.dir.display(),
            error = %message,
            kind = error.metric_label(),
            keeping = keeping.as_deref().unwrap_or("none"),
            "tls directory refused; keeping the last valid material"
        );
        last.warned = Some(message);
        true
    }

    /// A receiver that learns each time the material is swapped.
    pub fn subscribe(&self) -> watch::Receiver<Option<Arc<Material>>> {
        self.inner.current.subscribe()
    }

    /// A snapshot for `/status`.
    pub fn status(&self) -> TlsStatus {
        let current = self.current();
        let last = self.lock_error();
        TlsStatus {
            dir: self.inner.dir.display().to_string(),
            revision: current.as_ref().map(|m| m.revision().to_owned()),
            not_after: current.as_ref().map(|m| rfc3339(m.not_after())),
            ca_fingerprints: current
                .as_ref()
                .map(|m| m.ca_fingerprints())
                .unwrap_or_default(),
            previous_ca_until: current
                .as_ref()
                .and_then(|m| m.previous_ca_until())
                .map(rfc3339),
            last_error: last.message.clone(),
            last_error_at: last.at.map(rfc3339),
        }
    }

    fn lock_error(&self) -> std::sync::MutexGuard<'_, LastError> {
        // The guarded data stays consistent even if a holder panicked: every write is a
        // plain field assignment.
        self.inner
            .error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "tests fail by panicking"
    )]

    use super::*;
    use crate::issue::Role;
    use crate::tls::load_dir;
    use crate::tls::testing::Pki;

    #[test]
    fn an_error_is_warned_once_until_it_changes() {
        let shared = SharedMaterial::new("/tls");
        let now = SystemTime::now();
        let missing = |name: &str| TlsError::Missing {
            path: Path::new("/tls").join(name),
        };
        assert!(shared.record_error(&missing("tls.crt"), now));
        assert!(!shared.record_error(&missing("tls.crt"), now));
        assert!(shared.record_error(&missing("ca.crt"), now));
        let status = shared.status();
        assert!(status.last_error.unwrap().contains("/tls/ca.crt"));
        assert_eq!(status.last_error_at, Some(rfc3339(now)));
        assert_eq!(status.revision, None);
    }

    #[test]
    fn set_swaps_only_a_new_revision_and_clears_the_error() {
        let now = SystemTime::now();
        let dir = tempfile::tempdir().unwrap();
        Pki::new(now).files(Role::Agent).write_plain(dir.path());
        let load = || load_dir(dir.path(), Role::Agent, now).unwrap();
        let shared = SharedMaterial::new(dir.path());
        let mut changes = shared.subscribe();
        shared.record_error(&TlsError::Missing { path: "x".into() }, now);
        assert!(shared.set(load()));
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        assert!(!shared.set(load()));
        assert!(!changes.has_changed().unwrap());
        let status = shared.status();
        assert_eq!(status.last_error, None);
        assert_eq!(status.revision.as_deref(), Some(load().revision()));
        assert!(status.not_after.is_some() && status.ca_fingerprints.len() == 1);
    }
}
