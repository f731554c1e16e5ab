//! HAProxy's stderr: forwarded line by line to our log, and its last lines
//! kept for error reports (a master that died during startup can no longer
//! answer `show startup-logs`).
//!
//! ```text
//!  haproxy stderr ──pipe──► forward() ──► tracing (target "haproxy", level from [ALERT]/[WARNING])
//!                                    └──► OutputTail (last TAIL_LINES lines)
//! ```
//!
//! HAProxy ignores SIGPIPE, so when the pipe's reading end goes away with a
//! crashed supervisor, its later messages are lost but it keeps running
//! (checked on 3.0.11 through a reload).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncRead, BufReader},
    task::JoinHandle,
};

/// How many of the last lines are kept.
pub(super) const TAIL_LINES: usize = 50;

/// The last [`TAIL_LINES`] lines HAProxy wrote, shared with the forwarder.
#[derive(Debug, Clone, Default)]
pub(super) struct OutputTail {
    lines: Arc<Mutex<VecDeque<String>>>,
}

impl OutputTail {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines, joined with newlines.
    pub(super) fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Reads `stream` until EOF, logging and keeping each line.
pub(super) fn forward<R>(stream: R, tail: OutputTail, pid: u32) -> JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut reader = BufReader::new(stream);
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            match reader.read_until(b'\n', &mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buffer).trim_end().to_owned();
            if line.is_empty() {
                continue;
            }
            if line.contains("[ALERT]") {
                tracing::error!(target: "haproxy", pid, "{line}");
            } else if line.contains("[WARNING]") {
                tracing::warn!(target: "haproxy", pid, "{line}");
            } else {
                tracing::info!(target: "haproxy", pid, "{line}");
            }
            tail.push(line);
        }
    })
}

/// Waits (bounded) for the forwarder to reach EOF, so the tail holds the
/// dying process's last words, then returns the tail.
pub(super) async fn drain(forwarder: &mut JoinHandle<()>, tail: &OutputTail) -> String {
    // Workers that outlive the master still hold the pipe: do not wait
    // forever. A finished handle must not be polled again.
    if !forwarder.is_finished() {
        let _ = tokio::time::timeout(Duration::from_secs(1), forwarder).await;
    }
    tail.text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_last_lines_and_skips_blank_ones() {
        let input: String = (0..TAIL_LINES + 5)
            .map(|n| format!("line {n}\n\n"))
            .collect();
        let tail = OutputTail::default();
        let mut forwarder = forward(std::io::Cursor::new(input.into_bytes()), tail.clone(), 1);
        let text = drain(&mut forwarder, &tail).await;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines[0], "line 5");
        assert_eq!(lines[TAIL_LINES - 1], format!("line {}", TAIL_LINES + 4));
    }
}
