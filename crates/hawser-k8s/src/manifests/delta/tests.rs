//! A read told which files changed gives what a whole read gives.
//!
//! Oracle: after each of many pseudo-random file operations (files
//! written, rewritten and removed, objects moved between files, defined
//! twice, malformed documents, files in a subdirectory), a long-lived
//! reader told the paths the operation touched must load what a fresh
//! reader loads from the whole directory: the same objects, problems and
//! counts.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::super::load_dir;
use super::*;

/// splitmix64: the same operations on every run.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

fn service(name: u64, port: u64) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s{name}\n  namespace: app\n\
         spec:\n  ports:\n    - name: http\n      port: {port}\n"
    )
}

/// A file of one to three documents: Services (a few names, so some are
/// defined twice), now and then a document of an unknown kind or a
/// malformed one.
fn content(random: &mut Random) -> String {
    let documents: Vec<String> = (0..=random.below(3))
        .map(|_| match random.below(10) {
            0 => "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n".to_string(),
            1 => "apiVersion: v1\nkind: Service\nmetadata: [\n".to_string(),
            _ => service(random.below(40), 80 + random.below(3)),
        })
        .collect();
    documents.join("---\n")
}

/// What a read loaded, comparable and readable in a failure.
fn summary(set: &ManifestSet) -> String {
    format!(
        "{:#?}\nproblems: {:#?}\nfiles: {}, ignored: {}",
        set.store, set.problems, set.files, set.ignored
    )
}

const NAMES: [&str; 8] = [
    "a.yaml",
    "b.yaml",
    "c.yml",
    "d.json",
    "team/e.yaml",
    "team/f.yaml",
    "g.yaml",
    "h.yaml",
];

/// One operation on the directory: the paths it touched.
fn operate(dir: &Path, random: &mut Random) -> BTreeSet<PathBuf> {
    let path = dir.join(NAMES[random.below(NAMES.len() as u64) as usize]);
    match random.below(4) {
        0 => {
            let _ = fs::remove_file(&path);
            [path].into()
        }
        1 => {
            // Written beside it, then renamed into place.
            let to = dir.join(NAMES[random.below(NAMES.len() as u64) as usize]);
            fs::write(&path, content(random)).unwrap();
            fs::rename(&path, &to).unwrap();
            [path, to].into()
        }
        _ => {
            fs::write(&path, content(random)).unwrap();
            [path].into()
        }
    }
}

#[test]
fn reads_of_the_changed_files_load_what_whole_reads_load() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("team")).unwrap();
    let mut random = Random(7);
    let mut reader = ManifestReader::default();
    reader.read(dir.path()).unwrap();
    for step in 0..400 {
        let changed = operate(dir.path(), &mut random);
        let read = reader.read_changed(dir.path(), &changed).unwrap();
        let whole = load_dir(dir.path()).unwrap();
        assert_eq!(
            summary(&read),
            summary(&whole),
            "step {step}, after {changed:?}"
        );
    }
    // Most steps were read by their files alone, not by a whole read.
    assert!(
        reader.whole_reads < 200,
        "{} whole reads",
        reader.whole_reads
    );
}

#[test]
fn only_the_files_named_are_looked_at() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.yaml"), service(1, 80)).unwrap();
    let mut reader = ManifestReader::default();
    reader.read(dir.path()).unwrap();

    fs::write(dir.path().join("unannounced.yaml"), service(2, 80)).unwrap();
    fs::write(dir.path().join("b.yaml"), service(3, 80)).unwrap();
    let read = reader
        .read_changed(dir.path(), &[dir.path().join("b.yaml")].into())
        .unwrap();
    let names: Vec<_> = read.store.services().map(|s| s.key.name.clone()).collect();
    assert_eq!(names, ["s1", "s3"]);
}

#[test]
fn what_a_delta_cannot_be_sure_of_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    fs::write(path.join("a.yaml"), service(1, 80)).unwrap();
    let mut reader = ManifestReader::default();
    let names = |set: &ManifestSet| -> Vec<String> {
        set.store.services().map(|s| s.key.name.clone()).collect()
    };

    // No whole read yet.
    let read = reader.read_changed(path, &BTreeSet::new()).unwrap();
    assert_eq!(names(&read), ["s1"]);

    // A directory named by the change.
    fs::create_dir(path.join("team")).unwrap();
    fs::write(path.join("team/b.yaml"), service(2, 80)).unwrap();
    let read = reader
        .read_changed(path, &[path.join("team")].into())
        .unwrap();
    assert_eq!(names(&read), ["s1", "s2"]);

    // A hidden entry (a mounted ConfigMap's `..data`).
    fs::write(path.join("c.yaml"), service(3, 80)).unwrap();
    let read = reader
        .read_changed(path, &[path.join("..data")].into())
        .unwrap();
    assert_eq!(names(&read), ["s1", "s2", "s3"]);

    // A link named by a change, the first in the directory, to a file
    // outside it: what it points to changes with no event here, so from
    // then on reads are whole.
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("x.yaml"), service(9, 80)).unwrap();
    let link = path.join("first-link.yaml");
    std::os::unix::fs::symlink(outside.path().join("x.yaml"), &link).unwrap();
    let read = reader.read_changed(path, &[link.clone()].into()).unwrap();
    assert_eq!(names(&read), ["s1", "s2", "s3", "s9"]);
    fs::write(path.join("unannounced.yaml"), service(8, 80)).unwrap();
    let read = reader
        .read_changed(path, &[path.join("a.yaml")].into())
        .unwrap();
    assert_eq!(names(&read), ["s1", "s2", "s3", "s8", "s9"]);
    fs::remove_file(&link).unwrap();
    fs::remove_file(path.join("unannounced.yaml")).unwrap();

    // A symbolic link anywhere in the directory: what it points to
    // changes at another path.
    std::os::unix::fs::symlink(path.join("c.yaml"), path.join("link.yaml")).unwrap();
    reader.read(path).unwrap();
    fs::write(path.join("d.yaml"), service(4, 80)).unwrap();
    let read = reader
        .read_changed(path, &[path.join("a.yaml")].into())
        .unwrap();
    assert_eq!(names(&read), ["s1", "s2", "s3", "s4"]);
}
