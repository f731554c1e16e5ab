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
//! `..2024_…/app.yaml`), and editors and git leave hidden files behind. Symbolic
//! links are followed (the ConfigMap's visible files are links) but loops are not.

mod parse;
mod split;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

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

    let mut loader = Loader::default();
    let walk = WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| entry.depth() == 0 || !is_hidden(entry));
    for entry in walk {
        match entry {
            Ok(entry) if entry.file_type().is_file() && is_manifest(entry.path()) => {
                loader.load_file(entry.path());
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
    Ok(loader.set)
}

fn is_hidden(entry: &DirEntry) -> bool {
    entry.file_name().to_string_lossy().starts_with('.')
}

fn is_manifest(path: &Path) -> bool {
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
}

impl Loader {
    fn load_file(&mut self, path: &Path) {
        let bytes = match fs::read(path) {
            Ok(bytes) => bytes,
            Err(err) => {
                self.unreadable(path, None, format!("failed to read file: {err}"));
                return;
            }
        };
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => {
                let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
                let line = valid.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
                let message = format!("file is not UTF-8: {}", err.utf8_error());
                self.unreadable(path, Some(line), message);
                return;
            }
        };
        self.set.files += 1;
        for entry in parse::parse_file(path, &text) {
            match entry {
                Entry::Object { object, line } => self.add(path, line, object),
                Entry::Ignored => self.set.ignored += 1,
                Entry::Problem(problem) => self.set.problems.push(problem),
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
