//! The process's log: lines written to stderr by a thread of their own.
//!
//! ```text
//!  controller, agent, HAProxy's stderr ──tracing──► queue (lines) ──writer thread──► stderr
//!                                                     full? the line is dropped, and counted
//! ```
//!
//! A write to stderr blocks when whoever reads it (a container runtime, a
//! terminal, a log shipper) does not read: written in place, one stalled
//! reader would stop renders, Applies and drift repair, and every change
//! would wait for its log lines on its way to traffic. Lines are queued
//! instead, and written in order by one thread; when the queue is full
//! ([`QUEUED_LINES`]), a line is dropped rather than waited for, and the
//! count of dropped lines is the metric `hawser_log_lines_dropped_total`.

use std::sync::OnceLock;

use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};

/// Lines queued for stderr before new ones are dropped: a burst of
/// warnings fits, and the queue's slots are allocated at once (a quarter
/// of a MiB; the default of 128,000 would be 4 MiB).
pub const QUEUED_LINES: usize = 8_192;

/// The count of lines dropped, once logging is set up.
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Sets up the log for `default_level` (or `HAWSER_LOG`), in JSON with
/// `HAWSER_LOG_FORMAT=json`. Lines queued when the guard is dropped are
/// written before its drop returns: keep it until the process ends.
pub fn init(default_level: &str) -> WorkerGuard {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HAWSER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("hawser-log")
        .finish(std::io::stderr());
    let _ = DROPPED.set(writer.error_counter());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    // HAWSER_LOG_FORMAT=json: one JSON object a line, for log collectors.
    if std::env::var("HAWSER_LOG_FORMAT").is_ok_and(|f| f == "json") {
        logs.json().init();
    } else {
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    guard
}

/// Lines dropped because stderr was not read fast enough.
pub fn dropped_lines() -> u64 {
    DROPPED
        .get()
        .map_or(0, |dropped| dropped.dropped_lines() as u64)
}
