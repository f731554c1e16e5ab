//! A scripted stand-in for an HAProxy socket: answers each session with the
//! next scripted behaviour and records what the client sent.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use tempfile::TempDir;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{UnixListener, UnixStream},
    task::JoinHandle,
};

/// What the fake does with one session.
#[derive(Debug, Clone)]
pub enum Session {
    /// Reads the command, writes this reply, closes.
    Reply(&'static str),
    /// Reads the command and closes without a byte.
    CloseSilently,
    /// Reads the command and never answers.
    Hang,
}

/// A fake socket serving a script of sessions in order.
pub struct FakeSocket {
    _dir: TempDir,
    /// The socket path.
    pub path: PathBuf,
    received: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl FakeSocket {
    /// Listens on a fresh socket and serves `script`, one entry a session.
    pub fn serve(script: Vec<Session>) -> Self {
        let dir = tempfile::tempdir().expect("failed to create a temporary directory");
        let path = dir.path().join("fake.sock");
        let listener = UnixListener::bind(&path).expect("failed to bind the fake socket");
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let task = tokio::spawn(async move {
            for session in script {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let log = Arc::clone(&log);
                tokio::spawn(serve_one(stream, session, log));
            }
        });
        Self {
            _dir: dir,
            path,
            received,
            task,
        }
    }

    /// A socket file nobody listens on: connecting is refused.
    pub fn refusing() -> (TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("failed to create a temporary directory");
        let path = dir.path().join("dead.sock");
        drop(UnixListener::bind(&path).expect("failed to bind the dead socket"));
        (dir, path)
    }

    /// Everything received so far, one string per session.
    pub fn received(&self) -> Vec<String> {
        self.received.lock().expect("lock poisoned").clone()
    }
}

impl Drop for FakeSocket {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_one(mut stream: UnixStream, session: Session, log: Arc<Mutex<Vec<String>>>) {
    let command = read_command(&mut stream).await;
    log.lock().expect("lock poisoned").push(command);
    match session {
        Session::Reply(reply) => {
            let _ = stream.write_all(reply.as_bytes()).await;
        }
        Session::CloseSilently => {}
        Session::Hang => tokio::time::sleep(Duration::from_secs(60)).await,
    }
}

/// Reads one command line, or a `<<` command through its empty line.
async fn read_command(stream: &mut UnixStream) -> String {
    let mut buffer = Vec::new();
    let mut chunk = [0_u8; 4096];
    while let Ok(read) = stream.read(&mut chunk).await {
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&buffer);
        let first_line_done = text.contains('\n');
        let is_payload = text
            .lines()
            .next()
            .is_some_and(|line| line.ends_with(" <<"));
        if first_line_done && (!is_payload || text.ends_with("\n\n")) {
            break;
        }
    }
    String::from_utf8_lossy(&buffer).into_owned()
}
