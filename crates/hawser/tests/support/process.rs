//! Child processes: the `hawser` binary and HAProxy, started with their output
//! captured, killed and reaped when their guard drops, and their output shown
//! when the test that started them fails.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::TIMEOUT;

/// Environment variables the `hawser` binary reads as defaults for its flags.
/// Removed from every child, so a developer's shell cannot change a test.
const HAWSER_FLAG_ENV: &[&str] = &[
    "HAWSER_MANIFESTS",
    "HAWSER_CONFIG",
    "HAWSER_HTTP_PORT",
    "HAWSER_HTTPS_PORT",
    "HAWSER_STATE_DIR",
    "HAWSER_ADMIN",
    "HAWSER_HEALTH_PORT",
    "HAWSER_CERTS_STORE",
    "HAWSER_ECHO_LISTEN",
    "HAWSER_LOG",
    "HAWSER_FAILPOINTS",
    "POD_NAMESPACE",
    "POD_NAME",
    "SERVICE_NAME",
    "INGRESS_NAME",
];

/// The HAProxy binary the tests run: `$HAWSER_HAPROXY`, never a guess.
///
/// Fails the test when it is unset: an end-to-end suite that silently skips
/// is worse than one that fails.
pub fn haproxy_binary() -> PathBuf {
    match std::env::var_os("HAWSER_HAPROXY").filter(|value| !value.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "HAWSER_HAPROXY is not set; the end-to-end tests need a real HAProxy >= 3.0. \
             From the repository root run\n\n    export HAWSER_HAPROXY=$(scripts/install-haproxy.sh)\n\n\
             and run the tests again."
        ),
    }
}

/// The HAProxy the upgrade-in-place test reloads into: `$HAWSER_HAPROXY_UPGRADE`,
/// another version than [`haproxy_binary`] (`scripts/test.sh` sets it to 3.2).
///
/// Fails the test when it is unset, like [`haproxy_binary`].
pub fn haproxy_upgrade_binary() -> PathBuf {
    match std::env::var_os("HAWSER_HAPROXY_UPGRADE").filter(|value| !value.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "HAWSER_HAPROXY_UPGRADE is not set; the upgrade-in-place test needs a second \
             HAProxy, of another version than HAWSER_HAPROXY, to reload into. From the \
             repository root run\n\n    export HAWSER_HAPROXY_UPGRADE=$(scripts/install-haproxy.sh 3.2)\n\n\
             and run the tests again."
        ),
    }
}

/// `hawser <args>` for the binary under test, with a clean environment for
/// its flags and `HAWSER_HAPROXY` set.
pub fn hawser_command<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    hawser_command_of(None, args)
}

/// [`hawser_command`] for `binary`, another hawser build than this one
/// when given (the scale benchmark compares two builds in one run).
pub fn hawser_command_of<I, S>(binary: Option<&Path>, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut command =
        Command::new(binary.unwrap_or_else(|| Path::new(env!("CARGO_BIN_EXE_hawser"))));
    command.args(args);
    for name in HAWSER_FLAG_ENV {
        command.env_remove(name);
    }
    command.env("HAWSER_HAPROXY", haproxy_binary());
    command
}

/// A command that ran to its end.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// Both streams, for assertions that do not care where a message went.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    pub fn describe(&self) -> String {
        format!(
            "exit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Runs `command` to its end, at most [`TIMEOUT`] (then kills it and fails).
pub fn run_to_end(command: &mut Command) -> Finished {
    let description = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
    let stdout = read_all(child.stdout.take().expect("piped stdout"));
    let stderr = read_all(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{description} did not finish within {TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Finished {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

fn read_all(mut stream: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A running child process, killed and reaped on drop.
#[derive(Debug)]
pub struct ChildGuard {
    name: String,
    child: Child,
    /// Everything the child printed so far, each line marked with its stream.
    output: Arc<Mutex<String>>,
    stdout_lines: Receiver<String>,
}

impl ChildGuard {
    /// Starts `command` with stdout and stderr captured.
    pub fn spawn(name: impl Into<String>, command: &mut Command) -> ChildGuard {
        let name = name.into();
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({command:?}): {e}"));
        let output = Arc::new(Mutex::new(String::new()));
        let (lines_tx, stdout_lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        capture_lines(stdout, "stdout", Arc::clone(&output), Some(lines_tx));
        capture_lines(stderr, "stderr", Arc::clone(&output), None);
        ChildGuard {
            name,
            child,
            output,
            stdout_lines,
        }
    }

    /// What the child printed so far.
    pub fn output(&self) -> String {
        self.output.lock().expect("output lock").clone()
    }

    /// The next line on the child's stdout; `None` when it closed stdout
    /// (exited) or printed nothing for [`TIMEOUT`].
    pub fn next_stdout_line(&self) -> Option<String> {
        self.stdout_lines.recv_timeout(TIMEOUT).ok()
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, when the child has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits, without blocking the runtime, until the child exits; `None`
    /// when it still runs after `limit`.
    pub async fn wait_exited(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!(
                "--- output of {} (pid {}) ---\n{}--- end of {} ---",
                self.name,
                self.child.id(),
                self.output(),
                self.name
            );
        }
    }
}

fn capture_lines(
    stream: impl Read + Send + 'static,
    label: &'static str,
    output: Arc<Mutex<String>>,
    lines: Option<mpsc::Sender<String>>,
) {
    thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if let Ok(mut output) = output.lock() {
                output.push_str(label);
                output.push_str(": ");
                output.push_str(&line);
                output.push('\n');
            }
            if let Some(lines) = &lines {
                let _ = lines.send(line);
            }
        }
    });
}

/// `kill -<signal> <pid>`: a signal from outside, as an operator or a crash
/// would send it.
pub fn signal(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), "--", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}
