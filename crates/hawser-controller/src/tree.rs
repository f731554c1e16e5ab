//! Writing a rendered file set to a directory, with the modes its kinds need.

use std::fs;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path};

use hawser_render::FileSet;

/// Writes every file under `dir` (created if missing); certificates 0600.
/// Refuses paths that are absolute or climb out of `dir`.
pub fn write_tree(files: &FileSet, dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    for (path, file) in files.iter() {
        let relative = Path::new(path);
        let contained = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        if !contained {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("refusing to write {path:?}: not a plain relative path"),
            ));
        }
        let target = dir.join(relative);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)?;
        }
        // Create with the final mode, so a key is never readable even briefly.
        let _ = fs::remove_file(&target);
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(file.mode())
            .open(&target)?;
        io::Write::write_all(&mut out, &file.content)?;
        fs::set_permissions(&target, fs::Permissions::from_mode(file.mode()))?;
    }
    Ok(())
}
