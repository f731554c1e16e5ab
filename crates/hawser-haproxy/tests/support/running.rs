//! A real HAProxy in master-worker mode in a temporary tree, stopped on drop.
//!
//! Frontends bind UNIX sockets inside the tree, so parallel tests never
//! fight over TCP ports.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use hawser_haproxy::{MasterCli, RuntimeApi, SocketError};
use tempfile::TempDir;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::UnixStream,
};

/// Replaced by the tree's absolute path in every file written.
pub const DIR: &str = "@DIR@";

/// One frontend answering `GET /version` with `ok <VERSION>`, one TLS bind
/// with a crt-list, one host map, a dynamic-capable backend, and a TCP
/// proxy to `backend.sock` for holding connections open.
pub const CONFIG: &str = "\
global
    stats socket @DIR@/admin.sock level admin
    hard-stop-after 3s

defaults
    timeout connect 1s
    timeout client 10s
    timeout server 10s

frontend http
    mode http
    bind unix@@DIR@/http.sock
    bind unix@@DIR@/https.sock ssl crt certs/default.pem crt-list certs/crt-list.txt
    http-request return status 200 content-type text/plain string \"ok @VERSION@\" if { path /version }
    use_backend %[req.hdr(host),lower,map(maps/hosts.map,be_app)]

backend be_app
    mode http
    balance roundrobin
    server s1 127.0.0.1:9
    server s2 127.0.0.1:9

listen hold
    mode tcp
    bind unix@@DIR@/hold.sock
    balance roundrobin
    server h unix@@DIR@/backend.sock
";

/// [`CONFIG`] serving `version` at `/version`.
pub fn config(version: &str) -> String {
    CONFIG.replace("@VERSION@", version)
}

/// A running `haproxy -W -S <tree>/master.sock -C <tree> -f haproxy.cfg`.
pub struct RunningHaproxy {
    dir: TempDir,
    child: Child,
    /// Client for `<tree>/master.sock`.
    pub master: MasterCli,
    /// Client for `<tree>/admin.sock`.
    pub runtime: RuntimeApi,
}

impl RunningHaproxy {
    /// Starts HAProxy on [`config`]`("v1")`, default certificates and an
    /// empty map, and waits until both sockets answer.
    pub async fn start() -> Self {
        let default = super::certs::pem("default.example.test");
        let a = super::certs::pem("a.example.test");
        Self::start_with(&[
            ("haproxy.cfg", &config("v1")),
            ("certs/default.pem", &default),
            ("certs/a.pem", &a),
            ("certs/crt-list.txt", "certs/a.pem\n"),
            ("maps/hosts.map", "seed.example.test be_app\n"),
        ])
        .await
    }

    /// Starts HAProxy on `files` (which must include `haproxy.cfg`).
    pub async fn start_with(files: &[(&str, &str)]) -> Self {
        let binary = super::real_haproxy();
        let dir = tempfile::Builder::new()
            .prefix("hx")
            .tempdir_in("/tmp")
            .expect("failed to create a temporary tree");
        for (path, contents) in files {
            write(dir.path(), path, contents);
        }
        let log = fs::File::create(dir.path().join("haproxy.log")).expect("failed to create log");
        let child = Command::new(binary.path())
            .arg("-W")
            .arg("-S")
            .arg(dir.path().join("master.sock"))
            .arg("-C")
            .arg(dir.path())
            .arg("-f")
            .arg("haproxy.cfg")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("failed to clone log handle"))
            .stderr(log)
            .spawn()
            .expect("failed to start haproxy");
        let running = Self {
            master: MasterCli::new(dir.path().join("master.sock")),
            runtime: RuntimeApi::new(dir.path().join("admin.sock")),
            dir,
            child,
        };
        running.wait_ready().await;
        running
    }

    /// The tree HAProxy runs in (`-C`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A path inside the tree.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Writes a file of the tree (for the next reload).
    pub fn write(&self, relative: &str, contents: &str) {
        write(self.dir.path(), relative, contents);
    }

    /// HAProxy's stdout and stderr so far, for failure messages.
    pub fn log(&self) -> String {
        fs::read_to_string(self.path("haproxy.log")).unwrap_or_default()
    }

    /// Waits until the master lists a worker and the worker answers.
    pub async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let master = self.master.show_proc().await;
            let worker = self.runtime.show_info().await;
            if let (Ok(table), Ok(_)) = (&master, &worker)
                && table.workers.len() == 1
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "haproxy did not become ready: {master:?} {worker:?}\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// `GET <path>` on the HTTP frontend; the whole response.
    pub async fn get(&self, path: &str) -> String {
        let mut stream = UnixStream::connect(self.path("http.sock"))
            .await
            .expect("failed to connect to the http frontend");
        let request = format!("GET {path} HTTP/1.0\r\nHost: test\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        tokio::time::timeout(Duration::from_secs(3), stream.read_to_string(&mut response))
            .await
            .expect("the http frontend did not answer")
            .unwrap();
        response
    }
}

impl Drop for RunningHaproxy {
    fn drop(&mut self) {
        // SIGTERM lets the master stop its workers; SIGKILL would orphan them.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Retries `call` while it reports [`SocketError::Busy`] (a reload is under
/// way), for up to five seconds.
pub async fn until_not_busy<T, F, Fut>(mut call: F) -> Result<T, SocketError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SocketError>>,
{
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match call().await {
            Err(error) if error.is_busy() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
}

fn write(dir: &Path, relative: &str, contents: &str) {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("failed to create a tree directory");
    }
    let contents = contents.replace(DIR, &dir.display().to_string());
    fs::write(&path, contents).expect("failed to write a tree file");
}
