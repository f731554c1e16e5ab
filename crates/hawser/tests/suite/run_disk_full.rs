//! A full state directory: `hawser run` on a small tmpfs keeps serving the
//! version it serves when a new one does not fit, says why, leaves nothing of
//! the failed version behind, and applies the next change once there is room
//! again, without a restart (fixture `run_disk_full/`).
//!
//! Oracle: the kernel. Once a filler file has taken every block of the tmpfs,
//! writing a file there fails with ENOSPC, so the new version cannot be
//! staged: `/status` must name the full state directory, the
//! `hawser_failed_stages_total{reason="disk_full"}` series must count it, no
//! `staging.*` entry may remain, `current` must still name the version served
//! before, whose routes answer while the new Ingress's host does not. Once the
//! filler is removed, the version that did not fit must be served without a
//! further change (it is tried again), and a further change too.
//!
//! Needs `mount` (root); skipped with a message where it is not permitted.

use crate::support;

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::{Backends, Manifests, Run, RunOptions, TIMEOUT, TreeSnapshot, pod};

const NAMESPACE: &str = "disk";
const FILLER: &str = "filler";

/// A tmpfs mounted for the test; unmounted (and its mount point removed)
/// on drop, after everything that used it.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` at a new directory; `None` where mounting
    /// is not permitted.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::Builder::new()
            .prefix("hawser-e2e-disk-full-")
            .tempdir()
            .expect("mount point");
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .status();
        match status {
            Ok(s) if s.success() => Some(Tmpfs { dir }),
            other => {
                eprintln!("skipped: cannot mount a tmpfs here ({other:?}); this test needs root");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Takes every free block with a filler file.
    fn fill(&self) {
        let mut file = File::create(self.path().join(FILLER)).expect("create filler");
        let chunk = vec![0u8; 64 * 1024];
        loop {
            if let Err(e) = file.write_all(&chunk).and_then(|()| file.sync_all()) {
                assert_eq!(e.raw_os_error(), Some(28), "filling: {e}");
                return;
            }
        }
    }

    fn free(&self) {
        fs::remove_file(self.path().join(FILLER)).expect("remove filler");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // HAProxy was killed just before: its processes may take a moment to go.
        for _ in 0..50 {
            let unmounted = Command::new("umount")
                .arg(self.dir.path())
                .status()
                .is_ok_and(|s| s.success());
            if unmounted {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn ingress(name: &str, hosts: &[&str]) -> String {
    let rules: String = hosts
        .iter()
        .map(|host| {
            format!(
                "    - host: {host}\n      http:\n        paths:\n          - path: /\n            \
                 pathType: Prefix\n            backend: {{ service: {{ name: web, port: {{ name: http }} }} }}\n"
            )
        })
        .collect();
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: {name}, namespace: {NAMESPACE} }}\n\
         spec:\n  rules:\n{rules}"
    )
}

/// The value of a `/metrics` series (name and labels as printed), if shown.
async fn metric(run: &Run, series: &str) -> Option<f64> {
    let text = run.get_on(run.admin, "hawser", "/metrics").await.text();
    text.lines().find_map(|line| {
        line.strip_prefix(series)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}

/// Waits until `host` is answered with `status`.
async fn expect_status_eventually(run: &Run, host: &str, status: u16) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let response = run.get(host, "/").await;
        if response.status == status {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{host} answered {} instead of {status}\n{}",
            response.status,
            run.output()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_version_that_does_not_fit_leaves_the_served_one_and_the_next_applies_once_there_is_room()
{
    let Some(tmpfs) = Tmpfs::mount("8m") else {
        return;
    };
    let state: PathBuf = tmpfs.path().join("state");
    let backends = Backends::start(&[pod(NAMESPACE, "web", "web-0")]);
    let manifests = Manifests::from_fixture("run_disk_full", &backends.vars());
    let run = Run::start_with(
        manifests.path(),
        RunOptions {
            state_dir: Some(state.clone()),
            ..RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;
    run.expect_routed_to("a.example.com", "/", "web").await;
    let served = TreeSnapshot::read(&state).current;

    tmpfs.fill();
    let before = run.desired_generation().await;
    run.write_manifest("more.yaml", &ingress("b", &["b.example.com"]));
    let status = run.expect_outcome_after(before, "rejected").await;
    let error = status["agent"]["last_error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "the state directory {} is full",
            state.join("tree").display()
        )),
        "{status:#}"
    );
    assert!(
        status["agent"]["failed_stages"]["disk_full"].as_u64() >= Some(1),
        "{status:#}"
    );
    let counted = metric(&run, "hawser_failed_stages_total{reason=\"disk_full\"}").await;
    assert!(
        counted >= Some(1.0),
        "disk_full stages counted: {counted:?}"
    );

    let tree = TreeSnapshot::read(&state);
    assert!(tree.staging.is_empty(), "left behind: {:?}", tree.staging);
    assert_eq!(tree.current, served, "the served version was replaced");
    run.expect_routed_to("a.example.com", "/", "web").await;
    assert_eq!(run.get("b.example.com", "/").await.status, 404);

    tmpfs.free();
    // The version that did not fit is tried again by itself once there is
    // room: its failure was not its own.
    expect_status_eventually(&run, "b.example.com", 200).await;
    run.write_manifest(
        "more.yaml",
        &ingress("b", &["b.example.com", "c.example.com"]),
    );
    expect_status_eventually(&run, "b.example.com", 200).await;
    expect_status_eventually(&run, "c.example.com", 200).await;
    run.wait_converged().await;
    run.expect_routed_to("a.example.com", "/", "web").await;
    assert!(TreeSnapshot::read(&state).staging.is_empty());
    drop(run);
}
