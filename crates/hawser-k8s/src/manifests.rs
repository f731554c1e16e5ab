//! The manifests source: a directory of Kubernetes YAML/JSON files → a [`Store`].
//!
//! ```text
//!  dir/**/*.{yaml,yml,json}
//!    │ read, split on `---`          (sorted paths, hidden entries skipped)
//!    ▼
//!  documents ──serde-saphyr──► k8s-openapi objects ──from_k8s──► Store
//!    │                            (kind: List items too)
//!    └── unreadable / malformed / invalid / duplicate ──► problems
//! ```
//!
//! Loading fails only when the directory itself cannot be read. Whatever a file
//! holds is at worst a [`Problem`] naming the file, the line and the object, and
//! never stops the other documents or files: one typo must not blank the whole
//! configuration. Documents of kinds hawser does not read are counted, not stored.
//!
//! Entries whose name starts with `.` are skipped: a ConfigMap mounted as a volume
//! shows every file three times (`app.yaml`, `..data/app.yaml` and
//! `..2024_…/app.yaml`), and editors and git leave hidden files behind.
//! Symbolic links are followed (the ConfigMap's visible files are links) but
//! loops are not.
//!
//! A [`ManifestReader`] reads the same directory again and again (local mode,
//! on every change) and parses only the files that changed since its last
//! read: at thousands of objects, parsing is most of a read. A file is taken
//! as unchanged without reading it when its size, inode, modification and
//! change times are, and it was last modified well before that read (a write
//! within the same clock tick leaves the times alone). Otherwise it is read,
//! and parsed only when its content differs from what was parsed. Told
//! which files changed (local mode knows them from its watch events), it
//! looks at those alone and updates the last store by them
//! ([`ManifestReader::read_changed`]).

mod delta;
mod parse;
mod split;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use hawser_model::{Object, ObjectRef, Store};
use walkdir::{DirEntry, WalkDir};

use self::parse::Entry;

/// File extensions read as manifests (compared without regard to case).
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Why the manifests directory could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("manifests path {} is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("failed to read manifests directory {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What a manifests directory holds: the objects that loaded and what went wrong.
#[derive(Debug, Clone, Default)]
pub struct ManifestSet {
    /// Every object that parsed and converted, first definition wins.
    pub store: Store,
    /// In file order, then document order.
    pub problems: Vec<Problem>,
    /// Documents (and List items) of kinds hawser does not read.
    pub ignored: usize,
    /// Manifest files read (unreadable ones are problems, not counted).
    pub files: usize,
    /// Files parsed by this read; a [`ManifestReader`] reuses the others
    /// as it parsed them before.
    pub parsed: usize,
}

/// One thing wrong with one file, document or object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    /// The file line (1-based) of the error or of the object's document.
    pub line: Option<u64>,
    /// The object concerned, when it is known.
    pub object: Option<ObjectRef>,
    pub kind: ProblemKind,
    pub message: String,
}

/// A stable category for each problem, for metrics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProblemKind {
    /// YAML syntax, or a document whose shape does not fit its kind.
    Malformed,
    /// Well-formed, but the model rejected it (a [`ConvertError`](crate::ConvertError)).
    Invalid,
    /// The same kind and namespace/name defined again; the first one is kept.
    Duplicate,
    /// The file (or a directory below the root) could not be read, or is not UTF-8.
    Unreadable,
}

impl ProblemKind {
    /// A short lowercase label, stable for metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Malformed => "malformed",
            ProblemKind::Invalid => "invalid",
            ProblemKind::Duplicate => "duplicate",
            ProblemKind::Unreadable => "unreadable",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `file:line: Kind namespace/name: message`, leaving out what is unknown.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if let Some(object) = &self.object {
            write!(f, "{object}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Loads every `*.yaml`, `*.yml` and `*.json` file below `dir`, in sorted path order.
///
/// Errs only when `dir` is not a readable directory; every problem inside it is
/// collected in [`ManifestSet::problems`].
pub fn load_dir(dir: &Path) -> Result<ManifestSet, ManifestError> {
    ManifestReader::default().read(dir)
}

/// How long after a file's last modification its times are trusted to show
/// the next one: far longer than any file system's clock tick.
const RACY: Duration = Duration::from_secs(1);

/// Reads a manifests directory again and again, parsing only what changed.
#[derive(Debug, Default)]
pub struct ManifestReader {
    parsed: BTreeMap<PathBuf, ParsedFile>,
    /// What the last read loaded, which [`ManifestReader::read_changed`]
    /// updates by the files that changed; none until a whole read.
    last: Option<Loader>,
    /// Reads that walked the whole directory.
    #[cfg(test)]
    whole_reads: usize,
}

/// One file as last parsed.
#[derive(Debug)]
struct ParsedFile {
    /// `None` when the file could not be stat'ed: read again next time.
    stamp: Option<Stamp>,
    /// When the read that parsed it began.
    read_at: SystemTime,
    /// A hash of the content parsed; `None` when it could not be read.
    content: Option<u64>,
    entries: Vec<Entry>,
}

/// What tells that a file's content changed, without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    dev: u64,
    ino: u64,
    /// The change time, which every write and rename moves.
    ctime: (i64, i64),
    /// The modification time (to the nanosecond where the system keeps it).
    modified: Option<SystemTime>,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        fs::metadata(path).ok().map(|meta| Stamp::from(&meta))
    }

    fn from(meta: &fs::Metadata) -> Stamp {
        Stamp {
            len: meta.len(),
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            modified: meta.modified().ok(),
        }
    }
}

impl ParsedFile {
    /// Reads the file at `path`, stamped `stamp` at `read_at`; parses it
    /// (counted in `set`) unless its content is what `cached` parsed.
    fn read(
        path: &Path,
        stamp: Option<Stamp>,
        cached: Option<ParsedFile>,
        read_at: SystemTime,
        set: &mut ManifestSet,
    ) -> ParsedFile {
        let (content, bytes) = match fs::read(path) {
            Ok(bytes) => (Some(content_hash(&bytes)), Ok(bytes)),
            Err(err) => (None, Err(err)),
        };
        let entries = match cached.filter(|c| c.content.is_some() && c.content == content) {
            Some(same) => same.entries,
            None => {
                set.parsed += 1;
                parse_read(path, bytes)
            }
        };
        ParsedFile {
            stamp,
            read_at,
            content,
            entries,
        }
    }

    /// Whether this parse is still the content of a file stamped `now`.
    fn is_current(&self, now: &Stamp) -> bool {
        let settled = now
            .modified
            .and_then(|modified| modified.checked_add(RACY))
            .is_some_and(|settled| settled < self.read_at);
        self.stamp.as_ref() == Some(now) && settled
    }
}

impl ManifestReader {
    /// Reads `dir` as [`load_dir`] does, parsing only the files that changed
    /// since the last read.
    pub fn read(&mut self, dir: &Path) -> Result<ManifestSet, ManifestError> {
        #[cfg(test)]
        {
            self.whole_reads += 1;
        }
        let read_at = SystemTime::now();
        let mut loader = Loader::default();
        let mut parsed = BTreeMap::new();
        for path in manifest_files(dir, &mut loader)? {
            let stamp = Stamp::of(&path);
            let file = match (self.parsed.remove(&path), &stamp) {
                (Some(cached), Some(now)) if cached.is_current(now) => cached,
                (cached, _) => ParsedFile::read(&path, stamp, cached, read_at, &mut loader.set),
            };
            loader.add_file(&path, &file.entries);
            parsed.insert(path, file);
        }
        self.parsed = parsed;
        let set = loader.set.clone();
        self.last = Some(loader);
        Ok(set)
    }
}

/// The manifest files below `dir`, in sorted path order; what cannot be
/// walked below it is a problem in `loader`.
fn manifest_files(dir: &Path, loader: &mut Loader) -> Result<Vec<PathBuf>, ManifestError> {
    let read_error = |source| ManifestError::Read {
        path: dir.to_path_buf(),
        source,
    };
    if !fs::metadata(dir).map_err(read_error)?.is_dir() {
        return Err(ManifestError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    fs::read_dir(dir).map_err(read_error)?;

    let mut files = Vec::new();
    let walk = WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| entry.depth() == 0 || !is_hidden(entry));
    for entry in walk {
        if entry.as_ref().is_ok_and(DirEntry::path_is_symlink) {
            loader.links = true;
        }
        match entry {
            Ok(entry) if entry.file_type().is_file() && is_manifest(entry.path()) => {
                files.push(entry.into_path());
            }
            Ok(_) => {}
            Err(err) if err.depth() == 0 => {
                let source = err
                    .into_io_error()
                    .unwrap_or_else(|| io::Error::other("cannot walk the directory"));
                return Err(read_error(source));
            }
            Err(err) => loader.walk_problem(dir, &err),
        }
    }
    Ok(files)
}

fn is_hidden(entry: &DirEntry) -> bool {
    entry.file_name().to_string_lossy().starts_with('.')
}

/// Where a path lies for a read of a manifests directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Reached by the walk, if it is a manifest file.
    Visible,
    /// Below a hidden entry (or one itself), which the walk skips.
    Hidden,
    /// Not below the directory by plain names.
    Outside,
}

/// Where `path` lies for a read of `dir`.
pub fn placement(dir: &Path, path: &Path) -> Placement {
    let Ok(below) = path.strip_prefix(dir) else {
        return Placement::Outside;
    };
    let mut placement = Placement::Visible;
    for component in below.components() {
        match component {
            Component::Normal(name) if name.to_string_lossy().starts_with('.') => {
                placement = Placement::Hidden;
            }
            Component::Normal(_) => {}
            _ => return Placement::Outside,
        }
    }
    placement
}

/// Whether a file at `path` is read as manifests, by its extension (a
/// watcher tells by it whether an event may concern served objects).
pub fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| EXTENSIONS.iter().any(|e| ext.eq_ignore_ascii_case(e)))
}

/// Builds a [`ManifestSet`] file by file, remembering where each object was
/// first defined.
#[derive(Debug, Default)]
struct Loader {
    set: ManifestSet,
    defined_at: BTreeMap<ObjectRef, (PathBuf, u64)>,
    /// Some directory below the root could not be walked (its problem is
    /// among the set's).
    walk_problems: bool,
    /// The walk followed a symbolic link.
    links: bool,
}

/// A hash of a file's content, to tell whether it changed since it was
/// parsed.
fn content_hash(bytes: &[u8]) -> u64 {
    use std::hash::{DefaultHasher, Hasher};
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

/// One file's documents, from what reading it gave; a file that cannot be
/// read or decoded is one [`ProblemKind::Unreadable`] problem.
fn parse_read(path: &Path, read: io::Result<Vec<u8>>) -> Vec<Entry> {
    let unreadable = |line, message| {
        vec![Entry::Problem(Problem {
            file: path.to_path_buf(),
            line,
            object: None,
            kind: ProblemKind::Unreadable,
            message,
        })]
    };
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(err) => return unreadable(None, format!("failed to read file: {err}")),
    };
    match String::from_utf8(bytes) {
        Ok(text) => parse::parse_file(path, &text),
        Err(err) => {
            let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            let message = format!("file is not UTF-8: {}", err.utf8_error());
            unreadable(Some(line), message)
        }
    }
}

impl Loader {
    fn add_file(&mut self, path: &Path, entries: &[Entry]) {
        self.count_file(entries, |loader, object, line| {
            loader.add(path, line, object.clone());
        });
    }

    /// Counts a file read, its ignored documents and its problems, in
    /// document order with what `object` does with each object.
    fn count_file(&mut self, entries: &[Entry], mut object: impl FnMut(&mut Self, &Object, u64)) {
        let unreadable = matches!(
            entries,
            [Entry::Problem(Problem {
                kind: ProblemKind::Unreadable,
                ..
            })]
        );
        if !unreadable {
            self.set.files += 1;
        }
        for entry in entries {
            match entry {
                Entry::Object { object: o, line } => object(self, o, *line),
                Entry::Ignored => self.set.ignored += 1,
                Entry::Problem(problem) => self.set.problems.push(problem.clone()),
            }
        }
    }

    fn add(&mut self, path: &Path, line: u64, object: Object) {
        let object_ref = object.object_ref();
        if let Some((first_file, first_line)) = self.defined_at.get(&object_ref) {
            let message = format!(
                "defined again; the first definition, at {}:{first_line}, is kept",
                first_file.display()
            );
            self.set.problems.push(Problem {
                file: path.to_path_buf(),
                line: Some(line),
                object: Some(object_ref),
                kind: ProblemKind::Duplicate,
                message,
            });
            return;
        }
        self.defined_at
            .insert(object_ref, (path.to_path_buf(), line));
        self.set.store.insert(object);
    }

    fn walk_problem(&mut self, dir: &Path, err: &walkdir::Error) {
        self.walk_problems = true;
        let path = err.path().unwrap_or(dir);
        let message = match err.loop_ancestor() {
            Some(ancestor) => format!(
                "symbolic link loop back to {}, not followed",
                ancestor.display()
            ),
            None => format!("failed to read: {}", err_cause(err)),
        };
        self.unreadable(path, None, message);
    }

    fn unreadable(&mut self, path: &Path, line: Option<u64>, message: String) {
        self.set.problems.push(Problem {
            file: path.to_path_buf(),
            line,
            object: None,
            kind: ProblemKind::Unreadable,
            message,
        });
    }
}

/// The I/O error under a walk error, without walkdir's own path prefix.
fn err_cause(err: &walkdir::Error) -> String {
    match err.io_error() {
        Some(io) => io.to_string(),
        None => err.to_string(),
    }
}
