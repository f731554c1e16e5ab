//! The `validate` and `render` commands as a user runs them: exit codes,
//! HAProxy's verdict with the culprit named, deterministic output and private
//! key files (fixture `validate_cli/`: config files and a rejected manifest).

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use support::{Finished, fixture_dir, hawser_command, render, repository_dir, run_to_end};

/// sysexits' EX_USAGE: what hawser exits with on an invalid configuration.
const EXIT_USAGE: i32 = 64;

fn demo_dir() -> PathBuf {
    repository_dir().join("examples/demo")
}

fn validate(manifests: &Path, config: Option<&Path>) -> Finished {
    let mut command = hawser_command(["validate"]);
    command.arg("--manifests").arg(manifests);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    run_to_end(&mut command)
}

#[test]
fn validate_accepts_the_demo_example() {
    let run = validate(&demo_dir(), None);
    assert!(run.status.success(), "{}", run.describe());
    assert!(run.stdout.starts_with("valid: "), "{}", run.describe());
}

#[test]
fn validate_fails_with_haproxys_message_and_the_culprit_snippet() {
    let config = fixture_dir("validate_cli").join("bad-snippet.yaml");
    let run = validate(&demo_dir(), Some(&config));
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    let output = run.output();
    assert!(
        output.contains("unknown keyword 'nosuchdirective'"),
        "HAProxy's own message should be shown:\n{output}"
    );
    assert!(
        output.contains("(from snippet ") && output.contains("global-bad)"),
        "the snippet at fault should be named:\n{output}"
    );
    assert!(
        run.stdout.contains("the configuration check fails"),
        "{output}"
    );
}

/// The culprit is named as the user named the snippet in the config.
#[test]
fn validate_names_the_snippet_as_configured() {
    let config = fixture_dir("validate_cli").join("bad-snippet.yaml");
    let run = validate(&demo_dir(), Some(&config));
    assert!(
        run.output().contains("(from snippet global-bad)"),
        "{}",
        run.describe()
    );
}

#[test]
fn validate_fails_when_an_object_is_rejected() {
    let run = validate(&fixture_dir("validate_cli").join("rejected"), None);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    assert!(
        run.stderr.contains("rejected: Ingress cli/spaced: "),
        "{}",
        run.describe()
    );
    assert!(run.stdout.starts_with("invalid: "), "{}", run.describe());
}

#[test]
fn invalid_config_exits_64_with_the_setting_named() {
    for (file, named) in [
        ("invalid-config.yaml", "httpPort"),
        ("unknown-setting.yaml", "httpPrt"),
    ] {
        let config = fixture_dir("validate_cli").join(file);
        let run = validate(&demo_dir(), Some(&config));
        assert_eq!(run.status.code(), Some(EXIT_USAGE), "{}", run.describe());
        assert!(run.stderr.contains(named), "{file}: {}", run.describe());

        let out = tempfile::tempdir().expect("temporary directory");
        let run = render(&demo_dir(), &out.path().join("out"), Some(&config));
        assert_eq!(run.status.code(), Some(EXIT_USAGE), "{}", run.describe());
    }
}

#[test]
fn render_refuses_an_out_dir_that_holds_something_else() {
    let out = tempfile::tempdir().expect("temporary directory");
    fs::write(out.path().join("notes.txt"), "mine").expect("write");
    let run = render(&demo_dir(), out.path(), None);
    assert_eq!(run.status.code(), Some(EXIT_USAGE), "{}", run.describe());
    assert_eq!(
        fs::read_to_string(out.path().join("notes.txt")).expect("kept"),
        "mine"
    );
}

#[test]
fn rendering_twice_into_the_same_dir_gives_identical_files() {
    let work = tempfile::tempdir().expect("temporary directory");
    let out = work.path().join("out");
    let first = render(&demo_dir(), &out, None);
    assert!(first.status.success(), "{}", first.describe());
    let before = read_tree(&out);
    assert!(before.contains_key(Path::new("haproxy.cfg")), "{before:?}");
    assert!(before.contains_key(Path::new("certs/default.pem")));

    let second = render(&demo_dir(), &out, None);
    assert!(second.status.success(), "{}", second.describe());
    let after = read_tree(&out);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (path, content) in &before {
        assert!(
            after[path] == *content,
            "{} changed between two renders of the same input",
            path.display()
        );
    }
}

#[test]
fn certificate_files_are_readable_by_the_owner_only() {
    let work = tempfile::tempdir().expect("temporary directory");
    let out = work.path().join("out");
    let run = render(&demo_dir(), &out, None);
    assert!(run.status.success(), "{}", run.describe());
    let mut certificates = 0;
    for path in read_tree(&out).keys() {
        if path.extension().is_some_and(|ext| ext == "pem") {
            certificates += 1;
            let mode = fs::metadata(out.join(path))
                .expect("metadata")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{} has mode {mode:o}", path.display());
        }
    }
    // The demo's TLS Secret and the generated default certificate.
    assert_eq!(certificates, 2);
}

/// Every file under `dir`, by path relative to it.
fn read_tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in fs::read_dir(&current).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("under dir").to_path_buf();
                files.insert(relative, fs::read(&path).expect("read file"));
            }
        }
    }
    files
}

/// What `haproxy -c` lets through but would not run (a chroot to a missing
/// directory) fails validation too, naming the snippet at fault.
#[test]
fn validate_refuses_a_missing_chroot_that_haproxy_c_accepts() {
    let config = fixture_dir("validate_cli").join("missing-chroot.yaml");
    let run = validate(&demo_dir(), Some(&config));
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    let output = run.output();
    assert!(
        output.contains("chroot directory \"/nonexistent-hawser-jail\" does not exist"),
        "{output}"
    );
    assert!(output.contains("(from snippet global-jail)"), "{output}");
}
