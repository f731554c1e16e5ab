//! The config policy: what a rendered `haproxy.cfg` may never do, judged
//! before any `haproxy -c` and before any HAProxy starts, in every mode.
//!
//! ```text
//!  haproxy.cfg ──tokenize (as HAProxy 3.0 reads it)──► lines of words
//!                    │
//!                    ▼   keywords.rs: the one list, from doc/configuration.txt
//!  judge each line ──► Ok(())  or  PolicyError::Refused(Refusal { line, text, culprit, reason })
//!        ▲
//!        └── what the caller trusts: hawser's own sockets and files (from the
//!            mode's own paths, never from the configuration), the built-in Lua's
//!            digests, how to name a culprit
//! ```
//!
//! `haproxy -c` runs whatever Lua a configuration loads and opens whatever
//! files it names, so a configuration must be judged before HAProxy reads it.
//! A word-based scan is not enough: HAProxy unquotes, unescapes and expands
//! words first. `tokenize.rs` reads lines exactly as HAProxy 3.0.0 does (its
//! `readcfgfile()` in `src/cfgparse.c` and `parse_line()` in `src/tools.c`),
//! and the policy refuses:
//!
//! - every code loader (`lua-*` keywords, `program`/`command`, external
//!   checks, forks, OpenSSL engines and providers), except a `lua-load` of a
//!   file in the tree whose SHA-256 is one of the built-in Lua digests;
//! - environment expansion (`"$X"`, `"${X}"` and their other forms), `env()`,
//!   `.if defined()`, and `setenv`-like keywords;
//! - any file or socket outside the tree (absolute, `~`, `..` escapes,
//!   `fd@`, `sockpair@`, abstract sockets) that is not one of hawser's own;
//! - lines HAProxy itself would not read (unmatched quote, bad escape, NUL).
//!
//! Every line is judged, whatever `.if` block it sits in, and keywords are
//! compared in lower case (HAProxy compares them exactly): both refuse more,
//! never less. Built-in lines are allowed by what they name, never by their
//! text or a comment: `# from:` and `# snippet:` marks only name the culprit.

mod crt_list;
mod error;
mod keywords;
mod rules;
mod tokenize;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

pub use error::{PolicyError, Reason, Refusal};

/// Names the object or snippet that produced a line of the configuration
/// (the render's culprit marks), given the configuration and a line number.
pub type CulpritNamer = fn(&str, u32) -> Option<String>;

/// Files of the tree a policy may read (to digest a Lua file), by path
/// relative to the tree.
pub trait TreeFiles {
    /// The content of `relative`, when it is a regular file of the tree.
    fn read(&self, relative: &str) -> Option<Vec<u8>>;
}

/// The files of a tree on disk.
#[derive(Debug, Clone, Copy)]
pub struct TreeDir<'a>(pub &'a Path);

impl TreeFiles for TreeDir<'_> {
    fn read(&self, relative: &str) -> Option<Vec<u8>> {
        let path = self.0.join(relative);
        // A symlink could point anywhere: only a regular file counts.
        let meta = std::fs::symlink_metadata(&path).ok()?;
        meta.file_type()
            .is_file()
            .then(|| std::fs::read(&path).ok())
            .flatten()
    }
}

impl<F: Fn(&str) -> Option<Vec<u8>>> TreeFiles for F {
    fn read(&self, relative: &str) -> Option<Vec<u8>> {
        self(relative)
    }
}

/// What a rendered configuration may do, and what it may name of hawser's.
///
/// [`ConfigPolicy::default`] trusts nothing: no socket or file outside the
/// tree, no Lua at all.
#[derive(Debug, Clone, Default)]
pub struct ConfigPolicy {
    files: BTreeSet<String>,
    sockets: BTreeSet<String>,
    socket_dirs: BTreeSet<String>,
    lua_digests: BTreeSet<[u8; 32]>,
    namer: Option<CulpritNamer>,
    overrides: Vec<String>,
}

impl ConfigPolicy {
    /// Allows `path` as a file argument (the server-state file). Only
    /// absolute, normalized paths are kept.
    pub fn allow_file(mut self, path: impl AsRef<Path>) -> Self {
        if let Some(path) = normalized(path.as_ref()) {
            self.files.insert(path);
        }
        self
    }

    /// Allows `path` as a unix socket (the runtime API socket).
    pub fn allow_socket(mut self, path: impl AsRef<Path>) -> Self {
        if let Some(path) = normalized(path.as_ref()) {
            self.sockets.insert(path);
        }
        self
    }

    /// Allows every unix socket directly in `dir` (hawser's run directory:
    /// the mirror and TLS hand-off sockets live beside the runtime socket).
    pub fn allow_socket_dir(mut self, dir: impl AsRef<Path>) -> Self {
        if let Some(dir) = normalized(dir.as_ref()) {
            self.socket_dirs.insert(dir);
        }
        self
    }

    /// Allows `lua-load` of a file in the tree whose SHA-256 is `digest`.
    pub fn allow_lua_digest(mut self, digest: [u8; 32]) -> Self {
        self.lua_digests.insert(digest);
        self
    }

    /// Names culprits with `namer` (the render's culprit marks), and, where
    /// it names none, with the overridden templates `overrides`.
    pub fn name_culprits(mut self, namer: CulpritNamer, overrides: Vec<String>) -> Self {
        self.namer = Some(namer);
        self.overrides = overrides;
        self
    }

    /// Judges the configuration `config` (relative to `tree`, or absolute)
    /// with the files of `tree`.
    pub fn check_tree(&self, tree: &Path, config: &Path) -> Result<(), PolicyError> {
        let path = tree.join(config);
        let text = std::fs::read(&path).map_err(|source| PolicyError::Unreadable {
            path: PathBuf::from(&path),
            source,
        })?;
        self.check_config(&text, &TreeDir(tree))
    }

    /// Judges `config` (the bytes of `haproxy.cfg`), reading Lua files from
    /// `tree`. The first refused line is the error.
    pub fn check_config(&self, config: &[u8], tree: &dyn TreeFiles) -> Result<(), PolicyError> {
        self.check_lines(config, tokenize::lines(config), tree)
    }

    /// Judges `config` as [`check_config`](Self::check_config) would, given
    /// `passed`, a configuration that passed this policy with the files its
    /// lines read then unchanged in `tree`: only the lines of `config` that
    /// are not lines of `passed` are judged. Each line is judged by itself
    /// (its words and the files it names), so a line both share gets the
    /// same verdict, and removing lines refuses nothing. A change of a few
    /// server lines in a configuration of thousands is judged in
    /// proportion.
    pub fn check_config_change(
        &self,
        passed: &[u8],
        config: &[u8],
        tree: &dyn TreeFiles,
    ) -> Result<(), PolicyError> {
        let Some((changed, first)) = tokenize::changed_lines(passed, config) else {
            return Ok(());
        };
        self.check_lines(config, tokenize::lines_from(&config[changed], first), tree)
    }

    /// The first of `lines` (of `config`) refused, as the error.
    fn check_lines<'a>(
        &self,
        config: &[u8],
        mut lines: impl Iterator<Item = tokenize::Line<'a>>,
        tree: &dyn TreeFiles,
    ) -> Result<(), PolicyError> {
        let Some((line, reason)) = lines.find_map(|line| {
            rules::judge(self, &line, tree)
                .or_else(|| crt_list::judge(self, &line, tree))
                .map(|reason| (line, reason))
        }) else {
            return Ok(());
        };
        Err(PolicyError::Refused(Box::new(Refusal {
            line: line.number,
            text: error::quote_line(line.raw),
            culprit: self.culprit(config, line.number),
            reason,
        })))
    }

    /// What the culprit namer says line `line` of `config` came from (the
    /// render's marks only, without the overridden templates).
    pub fn marked_culprit(&self, config: &str, line: u32) -> Option<String> {
        self.namer.and_then(|namer| namer(config, line))
    }

    fn culprit(&self, config: &[u8], line: u32) -> Option<String> {
        let namer = self.namer?;
        namer(&String::from_utf8_lossy(config), line).or_else(|| {
            (!self.overrides.is_empty()).then(|| {
                format!(
                    "the built-in templates or override {}",
                    self.overrides.join(", ")
                )
            })
        })
    }

    pub(crate) fn is_builtin_lua(&self, content: &[u8]) -> bool {
        self.lua_digests
            .contains(&<[u8; 32]>::from(Sha256::digest(content)))
    }

    pub(crate) fn is_hawser_file(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    pub(crate) fn is_hawser_socket(&self, path: &str) -> bool {
        if self.sockets.contains(path) {
            return true;
        }
        normalized(Path::new(path))
            .filter(|p| p == path)
            .and_then(|p| Path::new(&p).parent().map(|d| d.display().to_string()))
            .is_some_and(|dir| self.socket_dirs.contains(&dir))
    }
}

/// `path` as text when absolute and already normalized (no `.`, `..`, `//`,
/// trailing `/`, or non-UTF-8): hawser's own paths are never anything else.
fn normalized(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let plain = text.starts_with('/')
        && text.len() > 1
        && !text.ends_with('/')
        && text[1..]
            .split('/')
            .all(|part| !matches!(part, "" | "." | ".."));
    plain.then(|| text.to_string())
}

#[cfg(test)]
mod tests;
