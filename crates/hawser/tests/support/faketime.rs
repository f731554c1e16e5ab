//! A wall clock a test steps under a running process, as an NTP step or a
//! VM resumed from a snapshot would: libfaketime (Debian's `faketime`
//! package, installed by `scripts/install-faketime.sh`) preloaded into it,
//! reading its offset from a file the test rewrites.
//!
//! ```text
//!  FakeClock::step(+1 day) ──writes "+86400"──► offset file
//!                                                  │ read at every clock_gettime(CLOCK_REALTIME)
//!  hawser (LD_PRELOAD=libfaketime) ◄───────────────┘ CLOCK_MONOTONIC left alone
//! ```
//!
//! Only the wall clock moves (`FAKETIME_DONT_FAKE_MONOTONIC`), as in a real
//! step. Children of the process inherit the preload: the HAProxy an agent
//! spawns steps with it, as it would on a node whose clock stepped (its
//! `haproxy -c` checks do not: their sandbox clears the environment). The
//! library is built for this machine's C library, and an HAProxy built for
//! another (Debian's 3.2 from sid, run by its own loader) hangs under it, so
//! the processes on a fake clock run the first HAProxy of `HAWSER_HAPROXY`,
//! `HAWSER_HAPROXY_UPGRADE` that answers `-v` under it.

use std::ffi::OsString;
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// Where Debian's `faketime` package puts the library, per architecture.
const DEBIAN_LIBRARIES: [&str; 2] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
];

/// The libfaketime the tests preload: `$HAWSER_FAKETIME`, else Debian's.
/// Absent, the test fails, naming the script that installs it: a clock test
/// that cannot move the clock must not pass.
pub fn faketime_library() -> PathBuf {
    if let Some(path) = std::env::var_os("HAWSER_FAKETIME").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "HAWSER_FAKETIME names {}, which is not a file; from the repository root run\n\n    \
             export HAWSER_FAKETIME=$(scripts/install-faketime.sh)\n",
            path.display()
        );
        return path;
    }
    DEBIAN_LIBRARIES
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "libfaketime is not installed; the clock-step tests need it to move a running \
                 process's wall clock. From the repository root run\n\n    \
                 export HAWSER_FAKETIME=$(scripts/install-faketime.sh)\n\n\
                 (it installs Debian's faketime package) and run the tests again."
            )
        })
}

/// One wall clock, shared by the processes started with its [`FakeClock::env`].
#[derive(Debug)]
pub struct FakeClock {
    dir: tempfile::TempDir,
    library: PathBuf,
    /// The HAProxy the processes on this clock run.
    haproxy: PathBuf,
    /// Seconds ahead of the real clock (negative: behind).
    offset: i64,
}

impl FakeClock {
    /// A clock showing the real time until stepped.
    pub fn new() -> FakeClock {
        let dir = tempfile::Builder::new()
            .prefix("hawser-e2e-clock-")
            .tempdir()
            .expect("clock directory");
        let mut clock = FakeClock {
            dir,
            library: faketime_library(),
            haproxy: PathBuf::new(),
            offset: 0,
        };
        clock.write();
        // Probed once per test process: a hanging one costs the probe's wait.
        static HAPROXY: OnceLock<PathBuf> = OnceLock::new();
        clock.haproxy = HAPROXY.get_or_init(|| clock.haproxy_that_runs()).clone();
        clock
    }

    /// The environment that puts a process (and its children) on this clock.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("LD_PRELOAD", self.library.clone().into_os_string()),
            ("FAKETIME_TIMESTAMP_FILE", self.file().into_os_string()),
            // Read the file at every call, so a step takes effect at once.
            ("FAKETIME_NO_CACHE", "1".into()),
            ("FAKETIME_CACHE_DURATION", "0".into()),
            // A step moves CLOCK_REALTIME; the monotonic clock goes on.
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1".into()),
            ("HAWSER_HAPROXY", self.haproxy.clone().into_os_string()),
        ]
    }

    /// The first HAProxy the tests were given that answers `-v` on this clock.
    fn haproxy_that_runs(&self) -> PathBuf {
        let given = ["HAWSER_HAPROXY", "HAWSER_HAPROXY_UPGRADE"]
            .into_iter()
            .filter_map(std::env::var_os)
            .filter(|path| !path.is_empty())
            .map(PathBuf::from);
        let mut tried = Vec::new();
        for haproxy in given {
            let mut command = Command::new(&haproxy);
            command
                .arg("-v")
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            command.envs(
                self.env()
                    .into_iter()
                    .filter(|(name, _)| *name != "HAWSER_HAPROXY"),
            );
            let Ok(mut child) = command.spawn() else {
                tried.push(haproxy);
                continue;
            };
            let deadline = Instant::now() + Duration::from_secs(5);
            let status = loop {
                match child.try_wait() {
                    Ok(Some(status)) => break Some(status),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    _ => break None,
                }
            };
            if status.is_some_and(|s| s.success()) {
                return haproxy;
            }
            let _ = child.kill();
            let _ = child.wait();
            tried.push(haproxy);
        }
        panic!(
            "no HAProxy runs under libfaketime ({}); tried {tried:?} (HAWSER_HAPROXY, \
             HAWSER_HAPROXY_UPGRADE). One built for this machine's C library does: \
             export HAWSER_HAPROXY=$(scripts/install-haproxy.sh 3.0)",
            self.library.display()
        )
    }

    /// Steps the clock to `offset_seconds` from the real time.
    pub fn step_to(&mut self, offset_seconds: i64) {
        self.offset = offset_seconds;
        self.write();
    }

    /// What the processes on this clock read now.
    pub fn now(&self) -> SystemTime {
        let real = SystemTime::now();
        let by = Duration::from_secs(self.offset.unsigned_abs());
        if self.offset >= 0 {
            real + by
        } else {
            real - by
        }
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join("offset")
    }

    /// Replaces the file whole: a process never reads half an offset.
    fn write(&self) {
        let tmp = self.dir.path().join(".offset.tmp");
        fs::write(&tmp, format!("{:+}\n", self.offset)).expect("write the clock offset");
        fs::rename(&tmp, self.file()).expect("replace the clock offset");
    }
}

/// The wall-clock time a `tracing` log line starts with
/// (`2026-12-02T02:16:38.123456Z  INFO ...`), if it does, as a
/// [`super::ChildGuard`] captured it (after its `stderr:` label).
pub fn log_line_time(line: &str) -> Option<SystemTime> {
    let at = line
        .split_whitespace()
        .take(2)
        .find_map(|word| word.parse::<k8s_openapi::jiff::Timestamp>().ok())?;
    Some(SystemTime::from(at))
}
