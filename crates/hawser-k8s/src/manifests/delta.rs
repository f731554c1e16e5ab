//! A read told which files changed: it looks at those files alone and
//! updates the last read's store by what they defined before and define
//! now, instead of walking the directory and building the store anew (at
//! thousands of files, the walk and the build are most of a read).
//!
//! ```text
//!  changed files ──► read, parse if the content changed ──► their objects leave, their new ones arrive
//!   unsure? ──► a whole read (ManifestReader::read)
//! ```
//!
//! It gives what a whole read gives, or it gives way to one. It is unsure
//! when there was no whole read before; when a changed path is not a
//! manifest file below the directory with no hidden entry on the way (a
//! directory, a `..data` link swap of a mounted ConfigMap: what lies below
//! them is not known); when an object is defined twice, before or after
//! (which definition is kept depends on every file's place in the sorted
//! order); when some directory could not be walked; and when the
//! directory holds a symbolic link (a change to what a link points to is
//! seen at the target's path, or not at all when it lies outside). Problems and
//! counts are taken again from every file's entries, in path order, as a
//! whole read lists them.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use hawser_model::{Object, ObjectRef};

use super::parse::Entry;
use super::{
    ManifestError, ManifestReader, ManifestSet, ParsedFile, Placement, ProblemKind, Stamp,
    is_manifest, placement,
};

/// The objects a changed file defined as last read, and those it defines now.
struct Edit {
    path: PathBuf,
    before: Vec<ObjectRef>,
    now: Vec<(Object, u64)>,
}

impl ManifestReader {
    /// Reads `dir` again, knowing that only the files in `changed` may
    /// differ from the last read (local mode gathers them from its watch
    /// events); gives what [`ManifestReader::read`] would, and reads the
    /// whole directory when it cannot be sure of that (see the module).
    pub fn read_changed(
        &mut self,
        dir: &Path,
        changed: &BTreeSet<PathBuf>,
    ) -> Result<ManifestSet, ManifestError> {
        match self.update(dir, changed) {
            Some(set) => Ok(set),
            None => self.read(dir),
        }
    }

    fn update(&mut self, dir: &Path, changed: &BTreeSet<PathBuf>) -> Option<ManifestSet> {
        let last = self.last.as_ref()?;
        let duplicates = last
            .set
            .problems
            .iter()
            .any(|p| p.kind == ProblemKind::Duplicate);
        if last.walk_problems || last.links || duplicates {
            return None;
        }
        if !changed.iter().all(|path| is_plain(dir, path)) {
            return None;
        }
        let read_at = SystemTime::now();
        let mut set = ManifestSet::default();
        let mut edits = Vec::new();
        for path in changed {
            let cached = self.parsed.remove(path);
            let before: Vec<ObjectRef> = cached
                .iter()
                .flat_map(|c| objects(&c.entries))
                .map(|(o, _)| o.object_ref())
                .collect();
            // A link (new, or a file replaced by one) is left to a whole
            // read, which notes that the directory holds links.
            match fs::symlink_metadata(path) {
                Ok(meta) if meta.is_file() => {
                    let parses = set.parsed;
                    let stamp = Some(Stamp::from(&meta));
                    let file = ParsedFile::read(path, stamp, cached, read_at, &mut set);
                    if set.parsed > parses {
                        let now = objects(&file.entries)
                            .map(|(o, line)| (o.clone(), line))
                            .collect();
                        edits.push(Edit {
                            path: path.clone(),
                            before,
                            now,
                        });
                    }
                    self.parsed.insert(path.clone(), file);
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    edits.push(Edit {
                        path: path.clone(),
                        before,
                        now: Vec::new(),
                    });
                }
                // A directory or a link by a manifest's name, or a file that
                // cannot be looked at now: the whole read says what it is.
                _ => return None,
            }
        }
        let mut loader = self.last.take()?;
        // Every object a changed file defined leaves before any it defines
        // now arrives, so an object moved between two files is no duplicate.
        for edit in &edits {
            for object in &edit.before {
                match loader.defined_at.remove(object) {
                    Some((file, _)) if file == edit.path => {
                        loader.set.store.remove(object);
                    }
                    _ => return None,
                }
            }
        }
        for edit in edits {
            for (object, line) in edit.now {
                let object_ref = object.object_ref();
                if loader.defined_at.contains_key(&object_ref) {
                    return None;
                }
                loader
                    .defined_at
                    .insert(object_ref, (edit.path.clone(), line));
                loader.set.store.insert(object);
            }
        }
        loader.set.parsed = set.parsed;
        loader.set.problems.clear();
        loader.set.files = 0;
        loader.set.ignored = 0;
        for file in self.parsed.values() {
            loader.count_file(&file.entries, |_, _, _| {});
        }
        let set = loader.set.clone();
        self.last = Some(loader);
        Some(set)
    }
}

/// The objects of a file's entries, with the line each starts on.
fn objects(entries: &[Entry]) -> impl Iterator<Item = (&Object, u64)> {
    entries.iter().filter_map(|entry| match entry {
        Entry::Object { object, line } => Some((object, *line)),
        _ => None,
    })
}

/// A manifest file below `dir` that a whole read would find by that path:
/// no hidden entry, no `..` on the way.
fn is_plain(dir: &Path, path: &Path) -> bool {
    placement(dir, path) == Placement::Visible && is_manifest(path)
}

#[cfg(test)]
mod tests;
