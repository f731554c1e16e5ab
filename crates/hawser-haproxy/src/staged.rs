//! Validating a staged tree: everything that must pass before HAProxy may
//! load a version, in one place for the controller's gate and the agent.
//!
//! ```text
//!  staged tree ──► config policy ──► haproxy -c (sandboxed) ──► check_global ──► CheckReport
//!                      │                   │                         │
//!                   Refused             Rejected                Unrunnable      (+ the culprit:
//!                                                                                the policy's namer)
//! ```

use std::path::Path;

use crate::checks::{AccountFiles, CheckError, check_global};
use crate::error::location;
use crate::{CheckReport, ConfigPolicy, HaproxyBinary, HaproxyError, PolicyError};

/// Why a staged tree may not be loaded, or could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum StagedTreeError {
    /// The config policy refused the configuration: HAProxy was not run.
    #[error("haproxy was not run: {0}")]
    Refused(#[source] PolicyError),
    /// `haproxy -c` rejected the configuration.
    #[error(
        "haproxy rejected the configuration{}:\n{output}{}",
        location(file.as_deref(), *line),
        at_culprit(*line, culprit.as_deref())
    )]
    Rejected {
        /// HAProxy's `[ALERT]` lines (with continuations), pid stripped.
        output: String,
        /// The file of the first alert that names a location.
        file: Option<String>,
        /// The line of the first alert that names a location.
        line: Option<u32>,
        /// What that line came from, when it is in the configuration.
        culprit: Option<String>,
    },
    /// A check `haproxy -c` does not make (a missing chroot directory or
    /// account): HAProxy would accept it and then fail to run it.
    #[error("{error}{}", at_culprit(u32::try_from(error.line()).ok(), culprit.as_deref()))]
    Unrunnable {
        #[source]
        error: CheckError,
        /// What the line at fault came from.
        culprit: Option<String>,
    },
    /// HAProxy could not judge the tree (not found, not started, timed out).
    #[error(transparent)]
    Unjudged(HaproxyError),
}

impl StagedTreeError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            StagedTreeError::Refused(error) => error.metric_label(),
            StagedTreeError::Rejected { .. } => "check_failed",
            StagedTreeError::Unrunnable { error, .. } => error.metric_label(),
            StagedTreeError::Unjudged(error) => error.metric_label(),
        }
    }
}

/// `\n(at haproxy.cfg line 12, from Service app/web port 80)`, or nothing.
fn at_culprit(line: Option<u32>, culprit: Option<&str>) -> String {
    match (line, culprit) {
        (Some(line), Some(culprit)) => format!("\n(at haproxy.cfg line {line}, from {culprit})"),
        _ => String::new(),
    }
}

impl HaproxyBinary {
    /// Validates the tree staged at `tree`, whose configuration is `config`
    /// (relative to `tree`) with the text `config_text`: the config
    /// `policy`, then `haproxy -c` ([`HaproxyBinary::check`]), then the
    /// checks `-c` does not make ([`check_global`]). A line at fault is
    /// blamed on what the policy's culprit namer says it came from.
    pub async fn check_staged_tree(
        &self,
        policy: &ConfigPolicy,
        tree: &Path,
        config: &str,
        config_text: &str,
    ) -> Result<CheckReport, StagedTreeError> {
        let report = match self.check(policy, tree, config).await {
            Ok(report) => report,
            Err(HaproxyError::CheckFailed { output, file, line }) => {
                let in_config = file.as_deref().is_none_or(|f| f == config);
                let culprit = line
                    .filter(|_| in_config)
                    .and_then(|line| policy.marked_culprit(config_text, line));
                return Err(StagedTreeError::Rejected {
                    output,
                    file,
                    line,
                    culprit,
                });
            }
            Err(HaproxyError::Refused(refused)) => return Err(StagedTreeError::Refused(refused)),
            Err(other) => return Err(StagedTreeError::Unjudged(other)),
        };
        check_global(config_text, &AccountFiles::default()).map_err(|error| {
            let culprit = u32::try_from(error.line())
                .ok()
                .and_then(|line| policy.marked_culprit(config_text, line));
            StagedTreeError::Unrunnable { error, culprit }
        })?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests;
