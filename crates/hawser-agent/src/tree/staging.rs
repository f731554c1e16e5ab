//! The directory a version is written into before it is renamed into place.
//!
//! It removes itself when dropped unless [`StagingDir::rename_to`] moved it:
//! a stage that fails half-way (a full disk, a file it cannot write, a bad
//! path) leaves nothing behind, so failed generations do not pile up until
//! the next start.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use tracing::warn;

use super::{TreeError, io_err};

/// A staging directory that is removed unless it was renamed into place.
#[derive(Debug)]
pub(super) struct StagingDir {
    path: PathBuf,
    /// Still ours to remove: not yet renamed into place.
    armed: bool,
}

impl StagingDir {
    /// Creates the directory empty (removing one an earlier try left).
    pub(super) fn create(path: PathBuf) -> Result<Self, TreeError> {
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path).map_err(io_err("cannot create", &path))?;
        Ok(StagingDir { path, armed: true })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the directory to `target`; from then on it is not removed.
    pub(super) fn rename_to(mut self, target: &Path) -> Result<(), TreeError> {
        fs::rename(&self.path, target).map_err(io_err("cannot rename into place", target))?;
        self.armed = false;
        Ok(())
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match fs::remove_dir_all(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => warn!(
                "cannot remove the failed stage {}: {e}",
                self.path.display()
            ),
        }
    }
}
