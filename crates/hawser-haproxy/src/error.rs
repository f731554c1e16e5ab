//! The one error type of HAProxy process tooling.

use std::{io, path::PathBuf, time::Duration};

use crate::Version;

/// How to get a usable HAProxy; appended to the errors that mean "wrong or no binary".
const INSTALL_HINT: &str =
    "run scripts/install-haproxy.sh and set HAWSER_HAPROXY to the path it prints";

/// Why HAProxy could not be found, run, or why it rejected a configuration.
#[derive(Debug, thiserror::Error)]
pub enum HaproxyError {
    /// `HAWSER_HAPROXY` is unset and no `haproxy` is on `PATH`.
    #[error(
        "no haproxy binary found: HAWSER_HAPROXY is not set and no haproxy is on PATH; {INSTALL_HINT}"
    )]
    NotFound,

    /// The binary could not be started or waited for.
    #[error("failed to run haproxy binary {}", path.display())]
    Spawn {
        /// The binary that was run.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },

    /// `haproxy -v` failed or printed no version.
    #[error("failed to read the version of {}: `-v` printed {banner:?}; {INSTALL_HINT}", path.display())]
    VersionUnreadable {
        /// The binary that was run.
        path: PathBuf,
        /// The first line it printed, if any.
        banner: String,
    },

    /// The binary is older than [`Version::MINIMUM`].
    #[error("{} is haproxy {found}, hawser needs {required} or newer; {INSTALL_HINT}", path.display())]
    TooOld {
        /// The binary that was run.
        path: PathBuf,
        /// The version it reported.
        found: Version,
        /// The minimum hawser supports.
        required: Version,
    },

    /// `haproxy -c` rejected the configuration.
    #[error("haproxy rejected the configuration{}:\n{output}", location(file.as_deref(), *line))]
    CheckFailed {
        /// HAProxy's `[ALERT]` lines (with continuations), pid stripped.
        output: String,
        /// The file of the first alert that names a location, as HAProxy
        /// printed it (relative to the tree when the config path was relative).
        file: Option<String>,
        /// The line of the first alert that names a location.
        line: Option<u32>,
    },

    /// The config policy refused the configuration: HAProxy was not run.
    #[error("haproxy was not run: {0}")]
    Refused(#[source] crate::PolicyError),

    /// `haproxy -c` did not finish in time and was killed.
    #[error("haproxy -c on {} did not finish within {timeout:?}", tree.display())]
    CheckTimedOut {
        /// The tree being checked.
        tree: PathBuf,
        /// The limit it exceeded.
        timeout: Duration,
    },
}

impl HaproxyError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::Spawn { .. } => "spawn",
            Self::VersionUnreadable { .. } => "version_unreadable",
            Self::TooOld { .. } => "too_old",
            Self::CheckFailed { .. } => "check_failed",
            Self::CheckTimedOut { .. } => "check_timed_out",
            Self::Refused(error) => error.metric_label(),
        }
    }
}

/// ` at haproxy.cfg:42`, ` in haproxy.cfg`, or nothing.
pub(crate) fn location(file: Option<&str>, line: Option<u32>) -> String {
    match (file, line) {
        (Some(file), Some(line)) => format!(" at {file}:{line}"),
        (Some(file), None) => format!(" in {file}"),
        (None, Some(line)) => format!(" at line {line}"),
        (None, None) => String::new(),
    }
}
