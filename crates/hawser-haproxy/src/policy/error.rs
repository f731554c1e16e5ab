//! What the config policy refuses and why: one error for the boundary, with a
//! stable category for metrics.

use std::{io, path::PathBuf};

/// The longest piece of a refused line quoted back: enough to find it, never
/// a whole file's content.
pub(crate) const MAX_QUOTED: usize = 120;

/// Why a configuration is refused before HAProxy sees it.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The configuration could not be read.
    #[error("failed to read the configuration {} for the config policy", path.display())]
    Unreadable {
        /// The file that was read.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },
    /// A line does what no rendered configuration may do.
    #[error("{0}")]
    Refused(Box<Refusal>),
}

impl PolicyError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Unreadable { .. } => "policy_unreadable",
            Self::Refused(refusal) => refusal.reason.metric_label(),
        }
    }

    /// The refusal, when it is one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Self::Refused(refusal) => Some(refusal),
            Self::Unreadable { .. } => None,
        }
    }
}

/// One refused line: where it is, what produced it, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the config policy refuses haproxy.cfg line {line}{}: `{text}`: {reason}",
    culprit.as_ref().map(|c| format!(" (from {c})")).unwrap_or_default()
)]
pub struct Refusal {
    /// The line number, from 1.
    pub line: u32,
    /// The line's text, trimmed, control characters escaped, at most
    /// [`MAX_QUOTED`] characters.
    pub text: String,
    /// The snippet, override or object that produced the line, when known.
    pub culprit: Option<String>,
    /// Why the line is refused.
    pub reason: Reason,
}

/// Why a line is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Reason {
    /// A keyword that loads or runs code, or forks.
    #[error("`{keyword}` loads or runs code, which hawser never lets a configuration do")]
    CodeLoader { keyword: String },
    /// A Lua file that is not hawser's built-in Lua (by its digest).
    #[error(
        "`{keyword}` of {path:?}: only hawser's built-in Lua may be loaded, and this file is not it"
    )]
    ForeignLua { keyword: String, path: String },
    /// Environment expansion, a change of the environment, or a read of it.
    #[error("{what}: the configuration may not read or change the environment")]
    Environment { what: String },
    /// A file or socket outside the rendered tree and not one of hawser's own.
    #[error("`{keyword}` names {path:?}, outside the rendered tree")]
    OutsideTree { keyword: String, path: String },
    /// An inherited or abstract socket.
    #[error(
        "`{keyword}` names the socket {address:?}, which is neither in the tree nor hawser's own"
    )]
    ForeignSocket { keyword: String, address: String },
    /// A file argument written with quotes or escapes inside a function's
    /// arguments, which HAProxy's argument parser reads again.
    #[error(
        "`{function}` takes a file written with quotes or escapes, which the policy does not read"
    )]
    ObscuredFile { function: String },
    /// A line HAProxy itself would not read.
    #[error("the line has {0}")]
    Malformed(&'static str),
}

impl Reason {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::CodeLoader { .. } => "code_loader",
            Self::ForeignLua { .. } => "foreign_lua",
            Self::Environment { .. } => "environment",
            Self::OutsideTree { .. } => "outside_tree",
            Self::ForeignSocket { .. } => "foreign_socket",
            Self::ObscuredFile { .. } => "obscured_file",
            Self::Malformed(_) => "malformed",
        }
    }
}

/// `raw` as a bounded, printable quote.
pub(crate) fn quote_line(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut quoted = String::new();
    for c in text.trim().chars() {
        if quoted.chars().count() >= MAX_QUOTED {
            quoted.push('…');
            break;
        }
        if c.is_control() {
            quoted.extend(c.escape_default());
        } else {
            quoted.push(c);
        }
    }
    quoted
}
