//! Versioned trees: every rendered version is written to its own directory and
//! published by atomically re-pointing a symlink. The live tree is never edited.
//!
//! ```text
//!  <base>/
//!    v00000000000000000012/   haproxy.cfg maps/ certs/ MANIFEST
//!    v00000000000000000013/   ...
//!    current -> v00000000000000000013   what HAProxy loads (-C <base>/current)
//!    lkg     -> v00000000000000000012   the last version verified serving
//!    loaded  -> v00000000000000000012   the version HAProxy last (re)loaded
//!    staging.<gen>.<pid>/      being written; never referenced
//! ```
//!
//! A version is written file by file (each fsynced, keys created 0600), then
//! its PLAN and MANIFEST (the digest of every file and of the plan), then the directory is fsynced and
//! renamed into place. A failed stage removes its staging directory at once
//! (a full disk is [`TreeError::StateFull`]); a crash at any point leaves
//! either a staging directory (removed at the next start) or a complete
//! version whose manifest proves it.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, symlink};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use hawser_plan::{FileKind, FileSet, Generation, Plan, RenderedFile, digest};

use self::staging::StagingDir;

mod listing;
mod staging;

pub use listing::{ListedFile, VersionListing};

const MANIFEST: &str = "MANIFEST";
/// The version's plan, as JSON: what the agent knows HAProxy runs after a restart.
const PLAN: &str = "PLAN";
const MANIFEST_HEADER: &str = "hawser-manifest 1";
const VERSION_PREFIX: &str = "v";
const STAGING_PREFIX: &str = "staging.";
pub const CURRENT: &str = "current";
pub const LKG: &str = "lkg";
pub const LOADED: &str = "loaded";

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("version {version} is damaged: {reason}")]
    Damaged {
        version: VersionName,
        reason: String,
    },
    #[error("refusing to write {0:?}: not a plain relative path")]
    BadPath(String),
    /// No space (or no quota) left where versions are written.
    #[error("the state directory {} is full: {action} {}: {source}", dir.display(), path.display())]
    StateFull {
        dir: PathBuf,
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A newer version came while this one was written, and the writing
    /// stopped: nothing of it is left (see [`TreeStore::stage_unless`]).
    #[error("the staging of {0} was given up: a newer version came")]
    GivenUp(VersionName),
}

impl TreeError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            TreeError::Io { .. } => "io",
            TreeError::Damaged { .. } => "damaged",
            TreeError::BadPath(_) => "bad_path",
            TreeError::StateFull { .. } => "disk_full",
            TreeError::GivenUp(_) => "given_up",
        }
    }

    /// An I/O error that says the disk or the quota is full becomes
    /// [`TreeError::StateFull`] for `dir`; any other error is kept.
    fn full_in(self, dir: &Path) -> TreeError {
        match self {
            TreeError::Io {
                action,
                path,
                source,
            } if is_out_of_space(&source) => TreeError::StateFull {
                dir: dir.to_path_buf(),
                action,
                path,
                source,
            },
            other => other,
        }
    }
}

/// ENOSPC (no blocks or no inodes left) and EDQUOT.
fn is_out_of_space(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> TreeError + 'a {
    move |source| TreeError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// The directory name of a version: `v` and the zero-padded generation, so
/// names sort like generations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VersionName(pub Generation);

impl VersionName {
    fn parse(name: &str) -> Option<Self> {
        let digits = name.strip_prefix(VERSION_PREFIX)?;
        if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().map(VersionName)
    }

    pub fn generation(self) -> Generation {
        self.0
    }
}

impl fmt::Display for VersionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{VERSION_PREFIX}{:020}", self.0)
    }
}

/// What a version holds: each file's digest, kind and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub generation: Generation,
    /// Digest of the PLAN file.
    pub plan: String,
    pub files: BTreeMap<String, ManifestEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// Lowercase hex SHA-256 of the content.
    pub digest: String,
    pub kind: FileKind,
}

impl Manifest {
    pub fn of(generation: Generation, files: &FileSet, plan_json: &[u8]) -> Self {
        let files = files
            .iter()
            .map(|(path, file)| {
                let entry = ManifestEntry {
                    digest: digest(&file.content),
                    kind: file.kind,
                };
                (path.to_string(), entry)
            })
            .collect();
        Manifest {
            generation,
            plan: digest(plan_json),
            files,
        }
    }

    fn to_text(&self) -> String {
        let mut out = format!(
            "{MANIFEST_HEADER}\ngeneration {}\nplan {}\n",
            self.generation, self.plan
        );
        for (path, entry) in &self.files {
            out.push_str(&format!("{} {} {path}\n", entry.digest, entry.kind.name()));
        }
        out
    }

    fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        if lines.next()? != MANIFEST_HEADER {
            return None;
        }
        let generation = lines.next()?.strip_prefix("generation ")?.parse().ok()?;
        let plan = lines.next()?.strip_prefix("plan ")?.to_string();
        let mut files = BTreeMap::new();
        for line in lines {
            let mut parts = line.splitn(3, ' ');
            let digest = parts.next()?.to_string();
            let kind = FileKind::from_name(parts.next()?)?;
            let path = parts.next()?.to_string();
            files.insert(path, ManifestEntry { digest, kind });
        }
        Some(Manifest {
            generation,
            plan,
            files,
        })
    }
}

/// The versioned trees under one base directory.
#[derive(Debug, Clone)]
pub struct TreeStore {
    base: PathBuf,
}

impl TreeStore {
    /// Opens (creating) the base directory and removes staging directories a
    /// crash left behind; they were never referenced.
    pub fn open(base: impl Into<PathBuf>) -> Result<Self, TreeError> {
        let base = base.into();
        fs::create_dir_all(&base).map_err(io_err("cannot create", &base))?;
        let store = TreeStore { base };
        for entry in fs::read_dir(&store.base).map_err(io_err("cannot read", &store.base))? {
            let entry = entry.map_err(io_err("cannot read", &store.base))?;
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(STAGING_PREFIX)
            {
                let path = entry.path();
                fs::remove_dir_all(&path).map_err(io_err("cannot remove", &path))?;
            }
        }
        Ok(store)
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The absolute path HAProxy runs with (`-C`): `<base>/current`.
    pub fn current_path(&self) -> PathBuf {
        self.base.join(CURRENT)
    }

    pub fn version_path(&self, version: VersionName) -> PathBuf {
        self.base.join(version.to_string())
    }

    /// Writes a version and returns its name. Writing a generation that already
    /// exists with the same content reuses it; with other content it is an error.
    /// On any error nothing of the new version is left on disk.
    pub fn stage(
        &self,
        generation: impl Into<Generation>,
        files: &FileSet,
        plan: &Plan,
    ) -> Result<VersionName, TreeError> {
        self.stage_unless(generation, files, plan, &AtomicBool::new(false))
    }

    /// [`TreeStore::stage`], given up ([`TreeError::GivenUp`], nothing left
    /// on disk) when `given_up` is set before the version is complete. It
    /// is read before each file and before the rename into place: writing
    /// stops at most one file (its write and sync) after the flag is set.
    pub fn stage_unless(
        &self,
        generation: impl Into<Generation>,
        files: &FileSet,
        plan: &Plan,
        given_up: &AtomicBool,
    ) -> Result<VersionName, TreeError> {
        self.stage_files(generation.into(), files, plan, given_up)
            .map_err(|e| e.full_in(&self.base))
    }

    fn stage_files(
        &self,
        generation: Generation,
        files: &FileSet,
        plan: &Plan,
        given_up: &AtomicBool,
    ) -> Result<VersionName, TreeError> {
        let stop_if_given_up = || {
            if given_up.load(Ordering::Relaxed) {
                Err(TreeError::GivenUp(VersionName(generation)))
            } else {
                Ok(())
            }
        };
        let version = VersionName(generation);
        let plan_json = serde_json::to_vec(plan).map_err(|e| TreeError::Damaged {
            version,
            reason: format!("plan does not serialize: {e}"),
        })?;
        let manifest = Manifest::of(generation, files, &plan_json);
        let target = self.version_path(version);
        if target.exists() {
            let existing = self.verify(version)?;
            if existing == manifest {
                return Ok(version);
            }
            return Err(TreeError::Damaged {
                version,
                reason: "it exists with other content".to_string(),
            });
        }
        // Removed on every early return below; kept only once renamed.
        let staging = StagingDir::create(self.base.join(format!(
            "{STAGING_PREFIX}{generation}.{}",
            std::process::id()
        )))?;
        let mut dirs = vec![staging.path().to_path_buf()];
        let donor = self.donor();
        for (path, file) in files.iter() {
            stop_if_given_up()?;
            let relative = plain_relative(path)?;
            let dest = staging.path().join(relative);
            if let Some(parent) = dest.parent()
                && !dirs.iter().any(|d| d == parent)
            {
                fs::create_dir_all(parent).map_err(io_err("cannot create", parent))?;
                dirs.push(parent.to_path_buf());
            }
            let shared = donor
                .as_ref()
                .filter(|(_, listed)| listed.files.get(path) == manifest.files.get(path))
                .map(|(dir, _)| dir.join(relative));
            if !shared.is_some_and(|source| link_shared(&source, &dest, file)) {
                write_synced(&dest, &file.content, file.mode())?;
            }
        }
        // Every file is on disk and synced; no PLAN or MANIFEST yet vouches
        // for them.
        hawser_failpoint::failpoint!("tree.synced_before_manifest");
        write_synced(&staging.path().join(PLAN), &plan_json, 0o644)?;
        write_synced(
            &staging.path().join(MANIFEST),
            manifest.to_text().as_bytes(),
            0o644,
        )?;
        for dir in dirs.iter().rev() {
            sync_dir(dir)?;
        }
        stop_if_given_up()?;
        staging.rename_to(&target)?;
        sync_dir(&self.base)?;
        Ok(version)
    }

    /// `current`'s directory and MANIFEST: a new version links the files it
    /// shares with it (same path, kind and content) instead of writing and
    /// syncing them again. At thousands of routes most of a version is
    /// unchanged, and versions are never edited in place, so sharing an
    /// inode is safe; a damaged donor is caught by the check of the new
    /// version and by [`TreeStore::verify`] at start.
    fn donor(&self) -> Option<(PathBuf, Manifest)> {
        let dir = self.version_path(self.current()?);
        let text = fs::read_to_string(dir.join(MANIFEST)).ok()?;
        Some((dir, Manifest::parse(&text)?))
    }

    /// Re-reads a version and checks every file against its manifest.
    pub fn verify(&self, version: VersionName) -> Result<Manifest, TreeError> {
        let dir = self.version_path(version);
        let damaged = |reason: String| TreeError::Damaged { version, reason };
        let text = fs::read_to_string(dir.join(MANIFEST))
            .map_err(|e| damaged(format!("no readable MANIFEST: {e}")))?;
        let manifest =
            Manifest::parse(&text).ok_or_else(|| damaged("MANIFEST does not parse".into()))?;
        if manifest.generation != version.0 {
            return Err(damaged(format!(
                "MANIFEST says generation {}",
                manifest.generation
            )));
        }
        let plan = fs::read(dir.join(PLAN)).map_err(|e| damaged(format!("{PLAN}: {e}")))?;
        if digest(&plan) != manifest.plan {
            return Err(damaged(format!("{PLAN} does not match its digest")));
        }
        for (path, entry) in &manifest.files {
            let content = fs::read(dir.join(plain_relative(path)?))
                .map_err(|e| damaged(format!("{path}: {e}")))?;
            if digest(&content) != entry.digest {
                return Err(damaged(format!("{path} does not match its digest")));
            }
        }
        Ok(manifest)
    }

    /// Reads a version's files and plan back (after [`TreeStore::verify`]).
    pub fn read(&self, version: VersionName) -> Result<(FileSet, Plan), TreeError> {
        let manifest = self.verify(version)?;
        let dir = self.version_path(version);
        let plan_path = dir.join(PLAN);
        let plan_json = fs::read(&plan_path).map_err(io_err("cannot read", &plan_path))?;
        let plan = serde_json::from_slice(&plan_json).map_err(|e| TreeError::Damaged {
            version,
            reason: format!("{PLAN} does not parse: {e}"),
        })?;
        let mut files = FileSet::default();
        for (path, entry) in &manifest.files {
            let full = dir.join(plain_relative(path)?);
            let content = fs::read(&full).map_err(io_err("cannot read", &full))?;
            files.insert(path.clone(), entry.kind, content);
        }
        Ok((files, plan))
    }

    /// Points `current` at a version, atomically (symlink, then rename over).
    pub fn publish(&self, version: VersionName) -> Result<(), TreeError> {
        self.point(CURRENT, version)
    }

    /// Records a version as verified serving (`lkg`).
    pub fn mark_good(&self, version: VersionName) -> Result<(), TreeError> {
        self.point(LKG, version)
    }

    /// Records the version HAProxy last loaded by a reload or start (`loaded`).
    pub fn mark_loaded(&self, version: VersionName) -> Result<(), TreeError> {
        self.point(LOADED, version)
    }

    /// Points `current` back at `lkg`; returns it, or `None` without an `lkg`.
    pub fn roll_back(&self) -> Result<Option<VersionName>, TreeError> {
        let Some(good) = self.pointer(LKG) else {
            return Ok(None);
        };
        self.publish(good)?;
        Ok(Some(good))
    }

    pub fn current(&self) -> Option<VersionName> {
        self.pointer(CURRENT)
    }

    pub fn lkg(&self) -> Option<VersionName> {
        self.pointer(LKG)
    }

    pub fn loaded(&self) -> Option<VersionName> {
        self.pointer(LOADED)
    }

    fn pointer(&self, name: &str) -> Option<VersionName> {
        let target = fs::read_link(self.base.join(name)).ok()?;
        VersionName::parse(target.to_str()?)
    }

    fn point(&self, name: &str, version: VersionName) -> Result<(), TreeError> {
        self.repoint(name, version)
            .map_err(|e| e.full_in(&self.base))
    }

    fn repoint(&self, name: &str, version: VersionName) -> Result<(), TreeError> {
        let link = self.base.join(name);
        let tmp = self.base.join(format!(".{name}.tmp"));
        let _ = fs::remove_file(&tmp);
        symlink(version.to_string(), &tmp).map_err(io_err("cannot create symlink", &tmp))?;
        fs::rename(&tmp, &link).map_err(io_err("cannot rename symlink", &link))?;
        sync_dir(&self.base)
    }

    /// Every complete version on disk, oldest first.
    pub fn versions(&self) -> Result<Vec<VersionName>, TreeError> {
        let mut versions = Vec::new();
        for entry in fs::read_dir(&self.base).map_err(io_err("cannot read", &self.base))? {
            let entry = entry.map_err(io_err("cannot read", &self.base))?;
            if let Some(v) = entry.file_name().to_str().and_then(VersionName::parse) {
                versions.push(v);
            }
        }
        versions.sort();
        Ok(versions)
    }

    /// Removes versions no pointer names, keeping the newest `keep_recent`
    /// others. A version HAProxy may still read from (`current`, `lkg`,
    /// `loaded`) is never removed.
    pub fn collect_garbage(&self, keep_recent: usize) -> Result<Vec<VersionName>, TreeError> {
        let pinned: Vec<VersionName> = [self.current(), self.lkg(), self.loaded()]
            .into_iter()
            .flatten()
            .collect();
        let mut unpinned: Vec<VersionName> = self
            .versions()?
            .into_iter()
            .filter(|v| !pinned.contains(v))
            .collect();
        let cut = unpinned.len().saturating_sub(keep_recent);
        unpinned.truncate(cut);
        for version in &unpinned {
            let path = self.version_path(*version);
            fs::remove_dir_all(&path).map_err(io_err("cannot remove", &path))?;
        }
        Ok(unpinned)
    }
}

fn plain_relative(path: &str) -> Result<&Path, TreeError> {
    let relative = Path::new(path);
    let plain = !path.is_empty()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if plain && path != MANIFEST && path != PLAN {
        Ok(relative)
    } else {
        Err(TreeError::BadPath(path.to_string()))
    }
}

/// Links `source` (a file of an older version) as `dest` when it still has
/// the size and mode `file` asks for; false when it cannot, and `dest` is
/// then written.
fn link_shared(source: &Path, dest: &Path, file: &RenderedFile) -> bool {
    let fits = fs::metadata(source).is_ok_and(|meta| {
        meta.len() == file.content.len() as u64 && meta.mode() & 0o777 == file.mode()
    });
    fits && fs::hard_link(source, dest).is_ok()
}

fn write_synced(path: &Path, content: &[u8], mode: u32) -> Result<(), TreeError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(io_err("cannot create", path))?;
    // Written in two halves so that a crash test can die between them
    // (`tree.mid_write`): a torn file in a staging directory.
    let (head, tail) = content.split_at(content.len() / 2);
    file.write_all(head).map_err(io_err("cannot write", path))?;
    hawser_failpoint::failpoint!("tree.mid_write");
    file.write_all(tail).map_err(io_err("cannot write", path))?;
    file.sync_all().map_err(io_err("cannot sync", path))
}

fn sync_dir(dir: &Path) -> Result<(), TreeError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("cannot sync", dir))
}

#[cfg(test)]
mod tests;
