//! The highest leader epoch this agent has accepted, kept on disk so a
//! restart does not let a deposed controller back in.

use std::io::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct EpochFile {
    path: PathBuf,
    value: u64,
}

impl EpochFile {
    /// Reads the stored epoch; a missing or unreadable file counts as 0
    /// (anything a controller sends is then accepted and stored).
    pub fn open(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        EpochFile { path, value }
    }

    pub fn get(&self) -> u64 {
        self.value
    }

    /// Stores a newer epoch durably (temporary file, fsync, rename).
    pub fn raise(&mut self, epoch: u64) -> std::io::Result<()> {
        if epoch <= self.value {
            return Ok(());
        }
        write_synced(&self.path, format!("{epoch}\n").as_bytes())?;
        self.value = epoch;
        Ok(())
    }
}

fn write_synced(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(content)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn epoch_survives_a_restart_and_never_goes_down() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("epoch");
        let mut epoch = EpochFile::open(&path);
        assert_eq!(epoch.get(), 0);
        epoch.raise(7).unwrap();
        epoch.raise(3).unwrap();
        assert_eq!(EpochFile::open(&path).get(), 7);
    }
}
