//! The validation gate: a render is checked by the real HAProxy, in a tree
//! laid out exactly as the agent will lay it out, before anyone serves it,
//! with the same validation the agent runs
//! (`hawser_haproxy::HaproxyBinary::check_staged_tree`: the config policy,
//! `haproxy -c`, and the checks of what `haproxy -c` lets through).
//!
//! When HAProxy refuses the configuration, the gate names what is at fault:
//! templates mark each generated section with `# from: <object>` and each
//! snippet with `# snippet: <name>`, and the nearest such mark above the line
//! HAProxy complains about is the culprit.
use hawser_haproxy::{
    CheckError, CheckReport, ConfigPolicy, HaproxyBinary, HaproxyError, PolicyError,
    StagedTreeError,
};
use hawser_plan::{CONFIG_PATH, FileSet, builtin_lua_digests, culprit_at};
use hawser_render::RenderConfig;

use crate::tree::write_tree;

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("cannot stage the rendered files for checking: {0}")]
    Stage(#[source] std::io::Error),
    #[error("HAProxy rejects the rendered configuration{}:\n{output}", culprit_suffix(.line, .culprit))]
    Rejected {
        output: String,
        line: Option<u32>,
        culprit: Option<String>,
    },
    /// The config policy refused the render: HAProxy was not run on it.
    #[error(transparent)]
    Refused(PolicyError),
    #[error(transparent)]
    Haproxy(HaproxyError),
    /// A check `haproxy -c` does not make (a missing chroot directory or user).
    #[error("the rendered configuration would not run: {error}{}", culprit.as_ref().map(|c| format!(" (from {c})")).unwrap_or_default())]
    Unrunnable {
        error: CheckError,
        culprit: Option<String>,
    },
}

impl From<StagedTreeError> for GateError {
    fn from(error: StagedTreeError) -> Self {
        match error {
            StagedTreeError::Refused(refused) => GateError::Refused(refused),
            StagedTreeError::Rejected {
                output,
                line,
                culprit,
                ..
            } => GateError::Rejected {
                output,
                line,
                culprit,
            },
            StagedTreeError::Unrunnable { error, culprit } => {
                GateError::Unrunnable { error, culprit }
            }
            StagedTreeError::Unjudged(error) => GateError::Haproxy(error),
        }
    }
}

fn culprit_suffix(line: &Option<u32>, culprit: &Option<String>) -> String {
    match (line, culprit) {
        (Some(line), Some(culprit)) => format!(" at {CONFIG_PATH} line {line} (from {culprit})"),
        (Some(line), None) => format!(" at {CONFIG_PATH} line {line}"),
        _ => String::new(),
    }
}

/// The config policy for a render made with `config`: hawser's own paths are
/// the ones its settings name (the runtime socket, the sockets beside it, the
/// server-state file), the built-in Lua is known by its digest, and a refused
/// line is blamed on the render's culprit marks or the overridden templates.
///
/// `config` must be trusted (the controller's own, or the local user's):
/// a candidate's settings never widen the policy that judges it.
pub fn config_policy(config: &RenderConfig) -> ConfigPolicy {
    let settings = &config.settings;
    let mut policy = builtin_lua_digests()
        .into_iter()
        .fold(ConfigPolicy::default(), ConfigPolicy::allow_lua_digest)
        .name_culprits(
            culprit_at,
            config.templates.overrides.keys().cloned().collect(),
        );
    if let Some(socket) = &settings.runtime_socket {
        policy = policy.allow_socket(socket);
        if let Some(dir) = std::path::Path::new(socket).parent() {
            policy = policy.allow_socket_dir(dir);
        }
    }
    if let Some(file) = &settings.server_state_file {
        policy = policy.allow_file(file);
    }
    policy
}

/// Runs only the config policy on `files` (no HAProxy needed).
pub fn check_policy(policy: &ConfigPolicy, files: &FileSet) -> Result<(), GateError> {
    let config = files.text(CONFIG_PATH).unwrap_or_default();
    let tree = |path: &str| files.get(path).map(|file| file.content.clone());
    policy
        .check_config(config.as_bytes(), &tree)
        .map_err(GateError::Refused)
}

/// Writes `files` into a fresh temporary tree and runs `haproxy -c` on it,
/// after the config `policy`.
pub async fn check(
    haproxy: &HaproxyBinary,
    policy: &ConfigPolicy,
    files: &FileSet,
) -> Result<CheckReport, GateError> {
    let temp = tempfile::Builder::new()
        .prefix("hawser-check-")
        .tempdir()
        .map_err(GateError::Stage)?;
    let dir = temp.path();
    write_tree(files, dir).map_err(GateError::Stage)?;
    let config = files.text(CONFIG_PATH).unwrap_or_default();
    Ok(haproxy
        .check_staged_tree(policy, dir, CONFIG_PATH, config)
        .await?)
}
