//! Fixture manifests and `hawser render`.
//!
//! A test's manifests live in `tests/fixtures/<test file stem>/`, as ordinary
//! Kubernetes YAML with `${NAME}` placeholders for what is only known at run
//! time (echo addresses and ports, generated certificates). They are copied
//! into a temporary directory with the placeholders filled in; a placeholder
//! without a value fails the test, so a typo cannot go unnoticed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::process::{Finished, hawser_command, run_to_end};

/// Values for a fixture's `${NAME}` placeholders.
pub type Vars = BTreeMap<String, String>;

/// The repository root (for `examples/` and `scripts/`).
pub fn repository_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `tests/fixtures/<stem>`.
pub fn fixture_dir(stem: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(stem)
}

/// A manifests directory a test renders from, removed on drop.
#[derive(Debug)]
pub struct Manifests {
    dir: tempfile::TempDir,
}

impl Manifests {
    /// The fixture `stem` with its placeholders filled from `vars`.
    pub fn from_fixture(stem: &str, vars: &Vars) -> Manifests {
        let source = fixture_dir(stem);
        let dir = tempfile::Builder::new()
            .prefix(&format!("hawser-e2e-{stem}-"))
            .tempdir()
            .expect("temporary manifests directory");
        copy_filled(&source, dir.path(), vars);
        Manifests { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Removes one file, for a scenario that lacks an object of the fixture.
    pub fn remove(&self, file: &str) {
        let path = self.dir.path().join(file);
        fs::remove_file(&path).unwrap_or_else(|e| panic!("cannot remove {}: {e}", path.display()));
    }
}

fn copy_filled(source: &Path, target: &Path, vars: &Vars) {
    let entries =
        fs::read_dir(source).unwrap_or_else(|e| panic!("no fixture {}: {e}", source.display()));
    for entry in entries {
        let entry = entry.expect("fixture entry");
        let from = entry.path();
        let to = target.join(entry.file_name());
        if from.is_dir() {
            fs::create_dir_all(&to).expect("fixture subdirectory");
            copy_filled(&from, &to, vars);
            continue;
        }
        let text = fs::read_to_string(&from)
            .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", from.display()));
        let filled = fill(&text, vars).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        fs::write(&to, filled).expect("write filled fixture");
    }
}

/// Replaces every `${NAME}` in `text`; errs on a name `vars` lacks.
pub fn fill(text: &str, vars: &Vars) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed placeholder at {:?}", &rest[start..]))?;
        let name = &after[..end];
        let value = vars.get(name).ok_or_else(|| {
            let known: Vec<&str> = vars.keys().map(String::as_str).collect();
            format!(
                "placeholder ${{{name}}} has no value (known: {})",
                known.join(", ")
            )
        })?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `hawser render --manifests <manifests> --out <out> [--config <config>]`.
pub fn render(manifests: &Path, out: &Path, config: Option<&Path>) -> Finished {
    let mut command = hawser_command(["render"]);
    command
        .arg("--manifests")
        .arg(manifests)
        .arg("--out")
        .arg(out);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    run_to_end(&mut command)
}
