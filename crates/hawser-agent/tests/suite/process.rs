//! HAProxy supervision against the real HAProxy named by `HAWSER_HAPROXY`:
//! spawn, stop, adopt after a crash of ours, pid-file reuse, startup
//! failure, master crash and restart.
//!
//! Each test runs in its own temporary tree; a guard SIGKILLs every process
//! whose command line names that tree when the test ends, pass or fail.

use std::{
    fs,
    os::unix::{fs::symlink, process::ExitStatusExt},
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use hawser_agent::process::{HaproxyLayout, ProcessError, Started, StopMode, Supervisor};
use hawser_haproxy::MasterCli;
use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use tempfile::TempDir;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::common::haproxy;

const GRACE: Duration = Duration::from_secs(5);

/// A temporary state directory: `tree/v1`, `tree/current -> v1`, `run/`,
/// and a free loopback port. Dropping it kills every process naming it.
struct Fixture {
    dir: TempDir,
    port: u16,
}

impl Fixture {
    fn new() -> Self {
        // Short path: UNIX socket paths are limited to 107 bytes.
        let dir = tempfile::Builder::new()
            .prefix("hxp")
            .tempdir_in("/tmp")
            .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let fixture = Self { dir, port };
        fixture.write_version("v1", &fixture.config("v1"));
        fixture.point_current("v1");
        fixture
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn layout(&self) -> HaproxyLayout {
        HaproxyLayout::new(self.path("run"), self.path("tree/current"))
    }

    /// A frontend on the fixture's port answering `ok <body>`.
    fn config(&self, body: &str) -> String {
        format!(
            "global\n    stats socket {dir}/admin.sock level admin\n\n\
             defaults\n    mode http\n    timeout connect 1s\n    timeout client 5s\n    timeout server 5s\n\n\
             frontend fe\n    bind 127.0.0.1:{port}\n    \
             http-request return status 200 content-type text/plain string \"ok {body}\"\n",
            dir = self.dir.path().display(),
            port = self.port,
        )
    }

    fn write_version(&self, version: &str, config: &str) {
        let dir = self.path(&format!("tree/{version}"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("haproxy.cfg"), config).unwrap();
    }

    fn point_current(&self, version: &str) {
        let link = self.path("tree/current.tmp");
        symlink(version, &link).unwrap();
        fs::rename(&link, self.path("tree/current")).unwrap();
    }

    /// `GET /` on the frontend: the whole response.
    async fn get(&self) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.0\r\nHost: test\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        tokio::time::timeout(Duration::from_secs(3), stream.read_to_string(&mut response))
            .await
            .expect("the frontend did not answer")
            .unwrap();
        response
    }

    /// The live (non-zombie) HAProxy processes of this fixture, as
    /// `(masters, workers)`.
    fn processes(&self) -> (Vec<u32>, Vec<u32>) {
        let ours = processes_naming(self.dir.path());
        let pids: Vec<u32> = ours.iter().map(|(pid, _)| *pid).collect();
        let (masters, workers): (Vec<_>, Vec<_>) =
            ours.iter().partition(|(_, ppid)| !pids.contains(ppid));
        (
            masters.iter().map(|(pid, _)| *pid).collect(),
            workers.iter().map(|(pid, _)| *pid).collect(),
        )
    }

    fn assert_one_master(&self, master: u32) {
        let (masters, workers) = self.processes();
        assert_eq!(masters, vec![master], "masters (workers: {workers:?})");
        assert_eq!(workers.len(), 1, "workers: {workers:?}");
    }

    fn assert_nothing_runs(&self) {
        assert_eq!(self.processes(), (vec![], vec![]));
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        for (pid, _) in processes_naming(self.dir.path()) {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// Live processes whose command line mentions `dir`, with their parent pid.
fn processes_naming(dir: &Path) -> Vec<(u32, u32)> {
    let needle = dir.to_str().unwrap();
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(needle) {
            continue;
        }
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        if fields[0] != "Z" {
            found.push((pid, fields[1].parse().unwrap()));
        }
    }
    found
}

async fn show_proc(cli: &MasterCli) -> hawser_haproxy::ProcTable {
    for _ in 0..100 {
        match cli.show_proc().await {
            Err(error) if error.is_busy() => tokio::time::sleep(Duration::from_millis(20)).await,
            other => return other.unwrap(),
        }
    }
    panic!("master socket stayed busy");
}

fn pid_file(fixture: &Fixture) -> Option<String> {
    fs::read_to_string(fixture.path("run/haproxy.pid"))
        .ok()
        .map(|text| text.trim().to_owned())
}

#[tokio::test]
async fn spawns_serves_and_stops_cleanly() {
    let fixture = Fixture::new();
    let (supervisor, started) = Supervisor::start(&haproxy(), fixture.layout())
        .await
        .unwrap();
    assert_eq!(started, Started::Spawned);
    let master = supervisor.master_pid();

    let table = show_proc(&supervisor.master()).await;
    assert_eq!(table.master.pid, master);
    assert_eq!(table.workers.len(), 1, "{table:?}");
    assert_eq!(pid_file(&fixture), Some(master.to_string()));
    assert!(fixture.get().await.contains("ok v1"));
    fixture.assert_one_master(master);

    supervisor.stop(GRACE).await.unwrap();
    fixture.assert_nothing_runs();
    assert_eq!(pid_file(&fixture), None);
    assert!(!fixture.path("run/master.sock").exists());
    std::net::TcpListener::bind(("127.0.0.1", fixture.port)).expect("the port is still taken");
}

#[tokio::test]
async fn a_restarted_supervisor_adopts_the_running_master() {
    let fixture = Fixture::new();
    let binary = haproxy();
    let (first, _) = Supervisor::start(&binary, fixture.layout()).await.unwrap();
    let master = first.master_pid();
    first.detach();

    let (mut adopted, started) = Supervisor::start(&binary, fixture.layout()).await.unwrap();
    assert_eq!(started, Started::Adopted);
    assert_eq!(adopted.master_pid(), master);
    fixture.assert_one_master(master);

    // Our end of its stderr pipe is gone; HAProxy ignores SIGPIPE, so a
    // reload (which logs) still works.
    fixture.write_version("v2", &fixture.config("v2"));
    fixture.point_current("v2");
    let reply = adopted.master().reload().await.unwrap();
    assert!(reply.success, "{}", reply.startup_log);
    let table = show_proc(&adopted.master()).await;
    assert_eq!(table.master.pid, master);
    assert!(fixture.get().await.contains("ok v2"));
    // The re-exec keeps pid and start time: still the same live master.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), adopted.wait_exit())
            .await
            .is_err(),
        "a reload was mistaken for the master's death"
    );

    // The adopted master is not our child: its death is seen by polling.
    kill(Pid::from_raw(master as i32), Signal::SIGKILL).unwrap();
    let exit = tokio::time::timeout(GRACE, adopted.wait_exit())
        .await
        .unwrap();
    assert_eq!((exit.pid, exit.status), (master, None));
    fixture.assert_nothing_runs();

    adopted.restart(&binary).await.unwrap();
    assert_ne!(adopted.master_pid(), master);
    fixture.assert_one_master(adopted.master_pid());
    adopted.stop(GRACE).await.unwrap();
    fixture.assert_nothing_runs();
}

#[tokio::test]
async fn a_pid_file_naming_another_process_never_gets_it_signalled() {
    let fixture = Fixture::new();
    let mut bystander = tokio::process::Command::new("sleep")
        .arg("30")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let bystander_pid = bystander.id().unwrap();
    fs::create_dir_all(fixture.path("run")).unwrap();
    fs::write(
        fixture.path("run/haproxy.pid"),
        format!("{bystander_pid}\n"),
    )
    .unwrap();
    // And a master socket left by a dead master: nobody listens on it.
    drop(std::os::unix::net::UnixListener::bind(fixture.path("run/master.sock")).unwrap());

    let (supervisor, started) = Supervisor::start(&haproxy(), fixture.layout())
        .await
        .unwrap();
    assert_eq!(started, Started::Spawned);
    assert_ne!(supervisor.master_pid(), bystander_pid);
    assert_eq!(
        pid_file(&fixture),
        Some(supervisor.master_pid().to_string())
    );
    assert!(fixture.get().await.contains("ok v1"));

    supervisor.stop_with(StopMode::Hard, GRACE).await.unwrap();
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the bystander was signalled"
    );
    bystander.kill().await.unwrap();
}

#[tokio::test]
async fn a_config_that_does_not_load_reports_haproxys_alert() {
    let fixture = Fixture::new();
    let broken = fixture
        .config("v1")
        .replace("defaults\n", "defaults\n    bogus_keyword\n");
    fixture.write_version("v1", &broken);

    let error = Supervisor::start(&haproxy(), fixture.layout())
        .await
        .unwrap_err();
    assert_eq!(error.metric_label(), "exited_during_start");
    let ProcessError::ExitedDuringStart { status, output, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(!status.success());
    assert!(
        output.contains("[ALERT]") && output.contains("unknown keyword 'bogus_keyword'"),
        "{output}"
    );
    assert!(error.to_string().contains("bogus_keyword"), "{error}");
    fixture.assert_nothing_runs();
}

#[tokio::test]
async fn a_killed_master_is_noticed_and_restarted_on_current() {
    let fixture = Fixture::new();
    let binary = haproxy();
    let (mut supervisor, _) = Supervisor::start(&binary, fixture.layout()).await.unwrap();
    let master = supervisor.master_pid();

    kill(Pid::from_raw(master as i32), Signal::SIGKILL).unwrap();
    let exit = tokio::time::timeout(GRACE, supervisor.wait_exit())
        .await
        .unwrap();
    assert_eq!(exit.pid, master);
    assert_eq!(exit.status.and_then(|status| status.signal()), Some(9));
    fixture.assert_nothing_runs();
    // A second call answers the same at once.
    assert_eq!(supervisor.wait_exit().await, exit);

    // The caller repoints `current` before restarting; -C re-resolves it.
    fixture.write_version("v2", &fixture.config("v2"));
    fixture.point_current("v2");
    supervisor.restart(&binary).await.unwrap();
    assert_ne!(supervisor.master_pid(), master);
    fixture.assert_one_master(supervisor.master_pid());
    assert!(fixture.get().await.contains("ok v2"));
    supervisor.stop_with(StopMode::Hard, GRACE).await.unwrap();
    fixture.assert_nothing_runs();
}

#[tokio::test]
async fn a_master_that_does_not_answer_is_replaced() {
    let fixture = Fixture::new();
    let binary = haproxy();
    let (first, _) = Supervisor::start(&binary, fixture.layout()).await.unwrap();
    let old = first.master_pid();
    first.detach();
    // Its socket file is gone: it runs, it is ours, but cannot be driven.
    fs::remove_file(fixture.path("run/master.sock")).unwrap();

    let (supervisor, started) = Supervisor::start(&binary, fixture.layout()).await.unwrap();
    assert_eq!(started, Started::Spawned);
    assert_ne!(supervisor.master_pid(), old);
    fixture.assert_one_master(supervisor.master_pid());
    supervisor.stop_with(StopMode::Hard, GRACE).await.unwrap();
    fixture.assert_nothing_runs();
}

#[tokio::test]
async fn a_second_master_hidden_by_the_pid_file_is_found_and_stopped() {
    let fixture = Fixture::new();
    let binary = haproxy();
    let (first, _) = Supervisor::start(&binary, fixture.layout()).await.unwrap();
    let hidden = first.master_pid();
    first.detach();
    // Someone starts a second master on the same tree: thanks to
    // SO_REUSEPORT it starts fine, and takes over the pid file and socket.
    fs::remove_file(fixture.path("run/haproxy.pid")).unwrap();
    let layout = fixture.layout();
    let rogue = tokio::process::Command::new(binary.path())
        .arg("-W")
        .arg("-S")
        .arg(format!("{},mode,600", layout.master_socket().display()))
        .arg("-C")
        .arg(&layout.config_dir)
        .arg("-f")
        .arg("haproxy.cfg")
        .arg("-p")
        .arg(layout.pid_file())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let second = rogue.id().unwrap();
    let cli = MasterCli::new(fixture.path("run/master.sock"));
    for _ in 0..100 {
        if cli
            .show_proc()
            .await
            .is_ok_and(|table| table.master.pid == second)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(fixture.processes().0.len(), 2);

    let (supervisor, started) = Supervisor::start(&binary, fixture.layout()).await.unwrap();
    assert_eq!(started, Started::Adopted);
    assert_eq!(supervisor.master_pid(), second);
    fixture.assert_one_master(second);
    assert!(fixture.processes().0.iter().all(|&pid| pid != hidden));
    supervisor.stop_with(StopMode::Hard, GRACE).await.unwrap();
    fixture.assert_nothing_runs();
}

#[tokio::test]
async fn a_foreign_master_on_our_socket_is_refused() {
    let fixture = Fixture::new();
    let binary = haproxy();
    // A master on our socket path but another -C: not ours, never signalled.
    let layout = fixture.layout();
    fs::create_dir_all(&layout.run_dir).unwrap();
    let _foreign = tokio::process::Command::new(binary.path())
        .arg("-W")
        .arg("-S")
        .arg(layout.master_socket())
        .arg("-C")
        .arg(fixture.path("tree/v1"))
        .arg("-f")
        .arg("haproxy.cfg")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let cli = MasterCli::new(layout.master_socket());
    for _ in 0..100 {
        if cli.show_proc().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let error = Supervisor::start(&binary, layout).await.unwrap_err();
    assert_eq!(error.metric_label(), "foreign_master", "{error}");
    assert_eq!(
        fixture.processes().0.len(),
        1,
        "the foreign master must survive"
    );
}
