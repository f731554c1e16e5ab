//! The rendered file set: every file of one version, by relative path.

use std::collections::BTreeMap;

use serde::Serialize;

/// What a file is for; the agent treats each kind differently (maps and
/// certificates can change at runtime, the config cannot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    Config,
    Map,
    Certificate,
    CrtList,
    /// Lua code the configuration loads (`lua-load`): read only at start,
    /// so a change takes a reload.
    Lua,
    /// CA certificates servers verify their peers with (`ca-file`): read
    /// at start, so a change takes a reload.
    CaFile,
}

impl FileKind {
    /// The name a kind is written under (manifests, the agent protocol).
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Config => "config",
            FileKind::Map => "map",
            FileKind::Certificate => "certificate",
            FileKind::CrtList => "crt-list",
            FileKind::Lua => "lua",
            FileKind::CaFile => "ca-file",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "config" => FileKind::Config,
            "map" => FileKind::Map,
            "certificate" => FileKind::Certificate,
            "crt-list" => FileKind::CrtList,
            "lua" => FileKind::Lua,
            "ca-file" => FileKind::CaFile,
            _ => return None,
        })
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct RenderedFile {
    pub kind: FileKind,
    pub content: Vec<u8>,
}

impl RenderedFile {
    /// Certificates hold private keys: written 0600, never printed.
    pub fn is_secret(&self) -> bool {
        self.kind == FileKind::Certificate
    }

    /// The Unix mode the file is written with: certificates and
    /// haproxy.cfg (which may hold password hashes) 0600.
    pub fn mode(&self) -> u32 {
        if self.is_secret() || self.kind == FileKind::Config {
            0o600
        } else {
            0o644
        }
    }
}

impl std::fmt::Debug for RenderedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderedFile")
            .field("kind", &self.kind)
            .field("bytes", &self.content.len())
            .finish()
    }
}

/// Relative path → file, sorted, so iteration and output are deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileSet {
    files: BTreeMap<String, RenderedFile>,
}

impl FileSet {
    pub fn insert(&mut self, path: impl Into<String>, kind: FileKind, content: impl Into<Vec<u8>>) {
        self.files.insert(
            path.into(),
            RenderedFile {
                kind,
                content: content.into(),
            },
        );
    }

    pub fn get(&self, path: &str) -> Option<&RenderedFile> {
        self.files.get(path)
    }

    /// The file's content as text, for configs and maps.
    pub fn text(&self, path: &str) -> Option<&str> {
        self.get(path)
            .and_then(|f| std::str::from_utf8(&f.content).ok())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &RenderedFile)> {
        self.files.iter().map(|(p, f)| (p.as_str(), f))
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}
