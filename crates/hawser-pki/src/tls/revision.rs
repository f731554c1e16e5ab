//! Reading one whole revision of a tls directory, never a mix of two.
//!
//! Both layouts replace a directory's contents by swapping one symlink: a Kubernetes Secret
//! volume swaps `dir/..data` (the files are links through it), a DirStore swaps
//! `<store>/<name>` itself. So the link is resolved once, every file is read from the
//! resolved target, and the read is retried if the link moved meanwhile.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::TlsError;
use super::files;

/// How many times a directory swapped mid-read is read again before giving up.
const ATTEMPTS: usize = 5;

/// The Kubernetes Secret volume's atomically swapped link.
const DATA_LINK: &str = "..data";

/// Every file a tls directory may hold; others are ignored.
const FILES: [&str; 5] = [
    files::TLS_CRT,
    files::TLS_KEY,
    files::CA_CRT,
    files::PREVIOUS_CA_CRT,
    files::PREVIOUS_CA_UNTIL,
];

/// The files of one revision, as read.
pub(super) struct Revision {
    files: BTreeMap<&'static str, Vec<u8>>,
}

impl Revision {
    /// The bytes of `name`, when the revision holds it.
    pub(super) fn get(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Vec::as_slice)
    }

    /// SHA-256 over every file's name and contents: equal exactly when the contents are.
    pub(super) fn id(&self) -> String {
        let mut hash = Sha256::new();
        for (name, bytes) in &self.files {
            hash.update(name.as_bytes());
            hash.update([0]);
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        }
        hex::encode(hash.finalize())
    }
}

/// The directory the files of the current revision live in.
fn resolve(dir: &Path) -> io::Result<PathBuf> {
    let data = dir.join(DATA_LINK);
    match fs::symlink_metadata(&data) {
        Ok(_) => fs::canonicalize(data),
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::canonicalize(dir),
        Err(e) => Err(e),
    }
}

fn read_files(root: &Path) -> io::Result<BTreeMap<&'static str, Vec<u8>>> {
    let mut files = BTreeMap::new();
    for name in FILES {
        match fs::read(root.join(name)) {
            Ok(bytes) => {
                files.insert(name, bytes);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(files)
}

/// Reads the revision `dir` points at now.
pub(super) fn read(dir: &Path) -> Result<Revision, TlsError> {
    let unreadable = |source| TlsError::Unreadable {
        dir: dir.to_owned(),
        source,
    };
    for _ in 0..ATTEMPTS {
        let root = resolve(dir).map_err(unreadable)?;
        let files = read_files(&root);
        // A swap mid-read shows as a moved link (and often as files gone with the old
        // revision): read again rather than trust or report what was seen.
        if resolve(dir).ok().as_ref() != Some(&root) {
            continue;
        }
        return files.map(|files| Revision { files }).map_err(unreadable);
    }
    Err(TlsError::Unstable {
        dir: dir.to_owned(),
        attempts: ATTEMPTS,
    })
}
