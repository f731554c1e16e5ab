//! Where an agent keeps things under its state directory.
//!
//! ```text
//!  <state>/tree/            versioned trees (see `tree`); HAProxy runs -C <state>/tree/current
//!  <state>/run/master.sock  HAProxy's master CLI
//!  <state>/run/admin.sock   HAProxy's runtime API (the worker's stats socket)
//!  <state>/run/mirror.sock  request mirrors' internal frontend (rendered beside admin.sock)
//!  <state>/run/auth.sock    external authentication's internal frontend (the same)
//!  <state>/run/server-state what `show servers state` said right before the last reload
//!  <state>/run/haproxy.pid  the master's pid, to adopt it after a crash
//! ```

use std::path::PathBuf;

use hawser_haproxy::ConfigPolicy;
use hawser_plan::{builtin_lua_digests, culprit_at};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPaths {
    state: PathBuf,
}

impl AgentPaths {
    /// The state directory should be absolute: HAProxy is given these paths.
    pub fn new(state: impl Into<PathBuf>) -> Self {
        AgentPaths {
            state: state.into(),
        }
    }

    pub fn tree(&self) -> PathBuf {
        self.state.join("tree")
    }

    pub fn run(&self) -> PathBuf {
        self.state.join("run")
    }

    pub fn master_socket(&self) -> PathBuf {
        self.run().join("master.sock")
    }

    pub fn runtime_socket(&self) -> PathBuf {
        self.run().join("admin.sock")
    }

    pub fn server_state_file(&self) -> PathBuf {
        self.run().join("server-state")
    }

    /// The config policy every version is judged by before `haproxy -c`:
    /// the agent's own sockets (everything in `run/`) and server-state file,
    /// known from these paths, never from the configuration; the built-in
    /// Lua by its digest.
    pub fn config_policy(&self) -> ConfigPolicy {
        builtin_lua_digests()
            .into_iter()
            .fold(ConfigPolicy::default(), ConfigPolicy::allow_lua_digest)
            .allow_socket(self.runtime_socket())
            .allow_socket_dir(self.run())
            .allow_file(self.server_state_file())
            .name_culprits(culprit_at, Vec::new())
    }
}
