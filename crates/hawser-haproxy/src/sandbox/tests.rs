//! The sandbox with a shell standing in for HAProxy: what a child can and
//! cannot do, that the restriction stays off the caller's threads, and how
//! interpreters are found.

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

use super::program::{HEAD_BYTES, elf_interpreter_at, executables, shebang};
use super::*;

/// Runs `script` with `/bin/sh` in `sandbox`; returns its exit code and stdout.
async fn sh(sandbox: &Sandbox, script: &str) -> (Option<i32>, String) {
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let spawned = sandbox.spawn(command).await.unwrap();
    assert_ne!(
        spawned.enforcement,
        Enforcement::None,
        "these tests need a kernel with Landlock"
    );
    let output = spawned.child.wait_with_output().await.unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test]
async fn sandbox_child_reads_its_tree_only_and_writes_nothing() {
    let tree = tempfile::tempdir().unwrap();
    fs::write(tree.path().join("inside"), "inside-content\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), "secret-content\n").unwrap();
    let sandbox = Sandbox::new().read(tree.path());

    let script = format!(
        "read line < {tree}/inside && echo \"in:$line\"; \
         read line < {outside}/secret && echo \"out:$line\"; \
         echo marker > {outside}/marker && echo wrote-outside; \
         echo marker > {tree}/marker && echo wrote-inside; \
         echo done",
        tree = tree.path().display(),
        outside = outside.path().display(),
    );
    let (code, stdout) = sh(&sandbox, &script).await;
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("in:inside-content"), "{stdout}");
    assert!(stdout.contains("done"), "{stdout}");
    assert!(!stdout.contains("secret-content"), "{stdout}");
    assert!(!stdout.contains("wrote"), "{stdout}");
    assert!(!outside.path().join("marker").exists());
    assert!(!tree.path().join("marker").exists());

    // The caller's own threads are not restricted.
    assert_eq!(
        fs::read_to_string(outside.path().join("secret")).unwrap(),
        "secret-content\n"
    );
    fs::write(outside.path().join("unrestricted"), "yes").unwrap();
}

#[tokio::test]
async fn sandbox_child_executes_nothing_but_its_program_and_sees_no_environment() {
    let (code, stdout) = sh(
        &Sandbox::new(),
        "/bin/true && echo ran-true; echo \"env:${HOME:-empty}:${HAWSER_HAPROXY:-empty}\"",
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}");
    assert!(!stdout.contains("ran-true"), "{stdout}");
    assert!(stdout.contains("env:empty:empty"), "{stdout}");
}

#[tokio::test]
async fn sandbox_applies_its_limits_to_the_child() {
    let limits = Limits {
        cpu_seconds: 7,
        address_space_bytes: 900 << 20,
        file_size_bytes: 12345,
        niceness: 7,
    };
    let mut command = Command::new("/bin/sleep");
    command.arg("5");
    let spawned = Sandbox::new().limits(limits).spawn(command).await.unwrap();
    let pid = i32::try_from(spawned.child.id().unwrap()).unwrap();
    let (mut soft, mut hard) = (0, 0);
    rlimit::prlimit(
        pid,
        rlimit::Resource::CPU,
        None,
        Some((&mut soft, &mut hard)),
    )
    .unwrap();
    assert_eq!((soft, hard), (7, 8));
    rlimit::prlimit(
        pid,
        rlimit::Resource::AS,
        None,
        Some((&mut soft, &mut hard)),
    )
    .unwrap();
    assert_eq!(soft, 900 << 20);
    rlimit::prlimit(
        pid,
        rlimit::Resource::FSIZE,
        None,
        Some((&mut soft, &mut hard)),
    )
    .unwrap();
    assert_eq!(soft, 12345);
    let own = rustix::process::getpriority_process(None).unwrap();
    let child = rustix::process::getpriority_process(rustix::process::Pid::from_raw(pid)).unwrap();
    assert_eq!(
        child,
        (own + 7).min(19),
        "the child runs below this process"
    );
    assert_eq!(
        rustix::process::getpriority_process(None).unwrap(),
        own,
        "and this process's own priority is unchanged"
    );
}

#[tokio::test]
async fn sandbox_with_tcp_ports_still_starts_its_child() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The shell cannot open TCP connections, so what the ports allow is
    // proven with HAProxy (tests/suite/sandbox.rs); here the rules must build.
    let spawned = Sandbox::new()
        .bind_tcp([port])
        .connect_tcp([port])
        .spawn(Command::new("/bin/true"))
        .await
        .unwrap();
    assert!(
        spawned
            .child
            .wait_with_output()
            .await
            .unwrap()
            .status
            .success()
    );
}

#[tokio::test]
async fn sandbox_child_may_have_null_stdio() {
    let mut command = Command::new("/bin/true");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let spawned = Sandbox::new().spawn(command).await.unwrap();
    assert!(
        spawned
            .child
            .wait_with_output()
            .await
            .unwrap()
            .status
            .success()
    );
}

#[tokio::test]
async fn a_missing_tree_is_an_error_not_a_narrower_sandbox() {
    let error = Sandbox::new()
        .read("/nonexistent/hawser-tree")
        .spawn(Command::new("/bin/true"))
        .await
        .unwrap_err();
    assert_eq!(error.metric_label(), "path", "{error:?}");
}

#[test]
fn support_is_reported_and_stable() {
    let support = support();
    assert_eq!(support, super::support());
    assert_eq!(
        support.landlock_abi == 0,
        support.enforcement == Enforcement::None,
        "{support:?}"
    );
}

#[test]
fn interpreters_are_found_for_scripts_and_elf_binaries() {
    assert_eq!(
        shebang(b"#!/bin/sh -e\necho\n"),
        Some(PathBuf::from("/bin/sh"))
    );
    assert_eq!(shebang(b"echo\n"), None);
    assert_eq!(elf_interpreter_at(b"#!/bin/sh\n"), None);

    let sh = executables(Path::new("/bin/sh")).unwrap();
    assert!(sh.len() >= 2, "{sh:?}");
    assert!(
        sh[1].to_string_lossy().contains("ld-"),
        "the dynamic loader: {sh:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script");
    fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    let found = executables(&script).unwrap();
    assert_eq!(found[0], fs::canonicalize(&script).unwrap());
    assert_eq!(found[1], fs::canonicalize("/bin/sh").unwrap());
    assert!(found.len() >= 3, "{found:?}");
}

/// A binary whose loader path lies past the first [`HEAD_BYTES`], as
/// patchelf leaves one it gave a longer path: the loader is still found.
#[test]
fn an_elf_interpreter_past_the_head_is_found() {
    let interp = fs::canonicalize("/bin/sh").unwrap();
    let text = format!("{}\0", interp.display());
    let offset = HEAD_BYTES + 100;
    let mut elf = vec![0u8; usize::try_from(offset).unwrap()];
    elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
    elf[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
    elf[0x36..0x38].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
    elf[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
    elf[64..68].copy_from_slice(&3u32.to_le_bytes()); // PT_INTERP
    elf[64 + 0x08..64 + 0x10].copy_from_slice(&offset.to_le_bytes());
    let size = u64::try_from(text.len()).unwrap();
    elf[64 + 0x20..64 + 0x28].copy_from_slice(&size.to_le_bytes());
    elf.extend_from_slice(text.as_bytes());

    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("relocated");
    fs::write(&binary, &elf).unwrap();
    let found = executables(&binary).unwrap();
    assert_eq!(found[0], fs::canonicalize(&binary).unwrap());
    assert_eq!(found[1], interp, "{found:?}");
}
