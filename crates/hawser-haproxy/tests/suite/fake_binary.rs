//! Version gating, the check timeout and the check's CPU priority, with
//! shell scripts posing as HAProxy.
//!
//! One test on purpose: every script is written before any is run, so no
//! concurrent fork can hold a script open for writing while another is
//! executed (which fails with ETXTBSY).

use std::{fs, os::unix::fs::PermissionsExt, path::PathBuf, time::Duration};

use hawser_haproxy::{ConfigPolicy, HaproxyBinary, HaproxyError, Version};

/// Writes an executable script that prints `banner` for `-v` and runs `otherwise` for anything else.
fn fake(dir: &std::path::Path, name: &str, banner: &str, otherwise: &str) -> PathBuf {
    let path = dir.join(name);
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = -v ]; then\n  echo '{banner}'\n  exit 0\nfi\n{otherwise}\n"
    );
    fs::write(&path, script).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test]
async fn fake_binaries_are_gated_by_version_and_bounded_by_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let newer = fake(
        dir.path(),
        "newer",
        "HAProxy version 3.2.0-e134140 2025/05/28 - https://haproxy.org/",
        "exit 0",
    );
    let too_old = fake(
        dir.path(),
        "too-old",
        "HAProxy version 2.8.5-1 2023/12/07 - https://haproxy.org/",
        "exit 0",
    );
    let garbage = fake(dir.path(), "garbage", "hello", "exit 0");
    let hanging = fake(
        dir.path(),
        "hanging",
        "HAProxy version 3.0.11-1 2025/06/02 - https://haproxy.org/",
        // A busy shell: the check's sandbox lets it execute nothing else.
        "while :; do :; done",
    );
    let newer = HaproxyBinary::at(&newer).unwrap();
    assert_eq!(newer.version(), Version::new(3, 2, 0));

    let error = HaproxyBinary::at(&too_old).unwrap_err();
    assert!(
        matches!(error, HaproxyError::TooOld { found, .. } if found == Version::new(2, 8, 5)),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("2.8.5"), "{message}");
    assert!(message.contains("scripts/install-haproxy.sh"), "{message}");
    assert!(message.contains("HAWSER_HAPROXY"), "{message}");

    let error = HaproxyBinary::at(&garbage).unwrap_err();
    assert_eq!(error.metric_label(), "version_unreadable", "{error:?}");
    assert!(error.to_string().contains("\"hello\""), "{error}");

    let error = HaproxyBinary::at(dir.path().join("absent")).unwrap_err();
    assert_eq!(error.metric_label(), "spawn", "{error:?}");

    let hanging = HaproxyBinary::at(&hanging)
        .unwrap()
        .with_check_timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    fs::write(dir.path().join("haproxy.cfg"), "global\n").unwrap();
    let error = hanging
        .check(&ConfigPolicy::default(), dir.path(), "haproxy.cfg")
        .await
        .unwrap_err();
    assert!(
        matches!(error, HaproxyError::CheckTimedOut { timeout, .. } if timeout == Duration::from_millis(300)),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // A check nobody waits for runs below hawser's own CPU priority; by
    // default a check runs at it. (The sandbox keeps the child from
    // reading /proc: it is read from here, while the check runs.)
    let own = niceness(std::process::id()).unwrap();
    for (niceness_asked, below) in [(None, 0), (Some(10), 10)] {
        let mut binary = hanging.clone().with_check_timeout(Duration::from_secs(5));
        if let Some(asked) = niceness_asked {
            binary = binary.with_check_niceness(asked);
        }
        // The check timed out above may still be dying: not that one.
        let earlier = children_running(dir.path());
        let policy = ConfigPolicy::default();
        let check = binary.check(&policy, dir.path(), "haproxy.cfg");
        // The priority is set right after the child starts: it is seen
        // once it is, or the check times out first; and it stays.
        let wanted = (own + below).min(19);
        let seen = async {
            let child = loop {
                let new = children_running(dir.path())
                    .into_iter()
                    .find(|c| !earlier.contains(c));
                if let Some(child) = new
                    && niceness(child) == Some(wanted)
                {
                    break child;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            };
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert_eq!(niceness(child), Some(wanted), "the priority changed");
        };
        tokio::select! {
            () = seen => {}
            ended = check => panic!("no check ran at nice {wanted}: {ended:?}"),
        }
    }
}

/// The processes running a script of `dir` whose parent is this process.
fn children_running(dir: &std::path::Path) -> Vec<u32> {
    let ours = std::process::id().to_string();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
            let parent = stat.rsplit_once(") ")?.1.split_whitespace().nth(1)?;
            let cmdline = fs::read(entry.path().join("cmdline")).ok()?;
            let runs_ours = String::from_utf8_lossy(&cmdline).contains(&*dir.to_string_lossy());
            (parent == ours && runs_ours).then_some(pid)
        })
        .collect()
}

/// The `nice` value of process `pid` (the 19th field of its stat).
fn niceness(pid: u32) -> Option<i32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = stat.rsplit_once(") ")?.1;
    after_comm.split_whitespace().nth(16)?.parse().ok()
}
