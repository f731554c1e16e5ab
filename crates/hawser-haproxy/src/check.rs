//! `haproxy -c`: validating a staged configuration tree before it is loaded.

mod output;

use std::{io, path::Path, process::Stdio};

use tokio::process::Command;

use crate::sandbox::{Limits, Sandbox};
use crate::{ConfigPolicy, HaproxyBinary, HaproxyError};

/// What a passing check had to say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// HAProxy's `[WARNING]` messages (with their `|` continuation lines),
    /// pid stripped; empty for a clean configuration.
    pub warnings: Vec<String>,
}

impl HaproxyBinary {
    /// Runs `haproxy -c -C <tree> -f <config>`, so `config` and every relative
    /// path inside it (maps, certificates, error files) resolve in `tree`.
    ///
    /// `policy` judges the configuration first: a refused one is
    /// [`HaproxyError::Refused`] and HAProxy is never run on it.
    ///
    /// Returns the warnings when HAProxy accepts the configuration, and
    /// [`HaproxyError::CheckFailed`] with its alerts and the first location
    /// they name when it does not. A check still running after
    /// [`HaproxyBinary::check_timeout`] is killed and reported as
    /// [`HaproxyError::CheckTimedOut`].
    pub async fn check(
        &self,
        policy: &ConfigPolicy,
        tree: impl AsRef<Path>,
        config: impl AsRef<Path>,
    ) -> Result<CheckReport, HaproxyError> {
        let tree = tree.as_ref();
        policy
            .check_tree(tree, config.as_ref())
            .map_err(HaproxyError::Refused)?;
        let spawn_error = |source| HaproxyError::Spawn {
            path: self.path().to_owned(),
            source,
        };
        // No `-q`: it would also silence the alerts the caller needs.
        let mut command = Command::new(self.path());
        command
            .arg("-c")
            .arg("-C")
            .arg(tree)
            .arg("-f")
            .arg(config.as_ref())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // HAProxy runs candidate code while it parses (`lua-load`): it may
        // read the tree and nothing else of the user's, write nowhere and
        // connect nowhere. Dropping the wait on timeout kills it.
        let limits = Limits {
            niceness: self.check_niceness(),
            ..Limits::default()
        };
        let child = check_sandbox(tree, config.as_ref())
            .limits(limits)
            .spawn(command)
            .await
            .map_err(|error| spawn_error(io::Error::other(error)))?
            .child;
        let finished = tokio::time::timeout(self.check_timeout(), child.wait_with_output()).await;
        let Ok(finished) = finished else {
            return Err(HaproxyError::CheckTimedOut {
                tree: tree.to_owned(),
                timeout: self.check_timeout(),
            });
        };
        let result = finished.map_err(spawn_error)?;

        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&result.stderr),
            String::from_utf8_lossy(&result.stdout)
        );
        let messages = output::Messages::parse(&text);
        if result.status.success() {
            return Ok(CheckReport {
                warnings: messages.warnings,
            });
        }
        let (file, line) = messages
            .alerts
            .iter()
            .find_map(|alert| output::location(alert))
            .unzip();
        let output = if messages.alerts.is_empty() {
            messages.fallback(&result.status)
        } else {
            messages.alerts.join("\n")
        };
        Err(HaproxyError::CheckFailed { output, file, line })
    }
}

/// The sandbox of `haproxy -c`: the tree read-only (and the configuration,
/// when it is named by an absolute path outside it).
fn check_sandbox(tree: &Path, config: &Path) -> Sandbox {
    let sandbox = Sandbox::new().read(tree);
    if config.is_absolute() && !config.starts_with(tree) && config.exists() {
        return sandbox.read(config);
    }
    sandbox
}
