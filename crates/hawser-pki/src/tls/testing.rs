//! Fixtures for the tls tests: a CA and both identities minted with the crate's own
//! issuer, and tls directories written in each layout.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test fixtures fail by panicking"
)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use super::files;
use crate::issue::{self, CertifiedKey, Role};
use crate::lifecycle::rfc3339;
use crate::store::{DirStore, SecretData, SecretStore};

pub(super) const AGENT: &str = "hawser-agent";
pub(super) const CONTROLLER: &str = "hawser-controller";
pub(super) const HOUR: Duration = Duration::from_secs(3600);
pub(super) const DAY: Duration = Duration::from_secs(86_400);

/// `files` loaded as `role`'s tls directory at `now`.
pub(super) fn material(files: &TlsFiles, role: Role, now: SystemTime) -> super::Material {
    let dir = tempfile::tempdir().unwrap();
    files.write_plain(dir.path());
    super::load_dir(dir.path(), role, now).unwrap()
}

/// A CA and the two identities it signed, all valid from `now`.
pub(super) struct Pki {
    pub(super) ca: CertifiedKey,
    pub(super) agent: CertifiedKey,
    pub(super) controller: CertifiedKey,
}

impl Pki {
    pub(super) fn new(now: SystemTime) -> Pki {
        let ca = issue::new_ca(now, 365, 1).unwrap();
        Pki::under(ca, now, 30)
    }

    /// Identities valid for `days` from `now`, signed by `ca`.
    pub(super) fn under(ca: CertifiedKey, now: SystemTime, days: u32) -> Pki {
        let agent = issue::new_identity(&ca, Role::Agent, AGENT, now, days).unwrap();
        let controller = issue::new_identity(&ca, Role::Controller, CONTROLLER, now, days).unwrap();
        Pki {
            ca,
            agent,
            controller,
        }
    }

    pub(super) fn identity(&self, role: Role) -> &CertifiedKey {
        match role {
            Role::Agent => &self.agent,
            Role::Controller => &self.controller,
        }
    }

    /// The tls directory files of `role`'s identity.
    pub(super) fn files(&self, role: Role) -> TlsFiles {
        TlsFiles::new(&self.ca, self.identity(role))
    }
}

/// The files of one tls directory revision.
#[derive(Clone)]
pub(super) struct TlsFiles(pub(super) BTreeMap<String, Vec<u8>>);

impl TlsFiles {
    pub(super) fn new(ca: &CertifiedKey, identity: &CertifiedKey) -> TlsFiles {
        TlsFiles(BTreeMap::new())
            .with(files::TLS_CRT, &identity.cert_pem)
            .with(files::TLS_KEY, &identity.key_pem)
            .with(files::CA_CRT, &ca.cert_pem)
    }

    pub(super) fn with(mut self, name: &str, contents: impl AsRef<[u8]>) -> TlsFiles {
        self.0.insert(name.to_owned(), contents.as_ref().to_vec());
        self
    }

    pub(super) fn without(mut self, name: &str) -> TlsFiles {
        self.0.remove(name);
        self
    }

    /// Adds `previous` as the previous CA, trusted until `until`.
    pub(super) fn with_previous(self, previous: &CertifiedKey, until: SystemTime) -> TlsFiles {
        self.with(files::PREVIOUS_CA_CRT, &previous.cert_pem)
            .with(files::PREVIOUS_CA_UNTIL, rfc3339(until))
    }

    /// Writes the files into a plain directory `dir`.
    pub(super) fn write_plain(&self, dir: &Path) {
        fs::create_dir_all(dir).unwrap();
        for (name, contents) in &self.0 {
            fs::write(dir.join(name), contents).unwrap();
        }
    }

    /// Writes the files as the Secret `name` of a DirStore at `root`; returns its tls dir.
    pub(super) fn write_store(&self, root: &Path, name: &str) -> PathBuf {
        let mut data = SecretData::default();
        for (key, contents) in &self.0 {
            data.insert(key, contents.clone());
        }
        DirStore::new(root).write(name, &data).unwrap();
        root.join(name)
    }

    /// Writes the files as revision `rev` of a Kubernetes Secret volume at `dir` and
    /// points `..data` at it, atomically, the way the kubelet does.
    pub(super) fn write_volume(&self, dir: &Path, rev: &str) {
        let rev_dir = format!("..{rev}");
        self.write_plain(&dir.join(&rev_dir));
        let tmp = dir.join("..data_tmp");
        symlink(&rev_dir, &tmp).unwrap();
        fs::rename(&tmp, dir.join("..data")).unwrap();
        for name in self.0.keys() {
            let link = dir.join(name);
            if fs::symlink_metadata(&link).is_err() {
                symlink(Path::new("..data").join(name), link).unwrap();
            }
        }
    }
}

/// The certificate chain of `identity`, DER.
pub(super) fn chain(identity: &CertifiedKey) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(identity.cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}
