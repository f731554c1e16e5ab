//! The hostile corpus against the policy the agent judges every version
//! by (its own paths trusted, the built-in Lua by digest): every case is
//! refused for its reason.

use crate::hostile_configs;

use hawser_agent::AgentPaths;
use hawser_haproxy::TreeDir;

#[test]
fn every_case_is_refused_by_the_agents_policy() {
    let state = tempfile::tempdir().unwrap();
    let policy = AgentPaths::new(state.path().canonicalize().unwrap()).config_policy();
    let tree = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for case in hostile_configs::corpus() {
        match policy.check_config(&case.config, &TreeDir(tree.path())) {
            Err(error) if error.metric_label() == case.reason => {}
            other => wrong.push(format!("{}: {other:?}", case.name)),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn the_agents_own_sockets_and_state_file_are_trusted() {
    let state = tempfile::tempdir().unwrap();
    let paths = AgentPaths::new(state.path().canonicalize().unwrap());
    let config = format!(
        "global\n  stats socket {} mode 600 level admin\n  server-state-file {}\nfrontend m\n  bind unix@{} mode 600\n",
        paths.runtime_socket().display(),
        paths.server_state_file().display(),
        paths.run().join("mirror.sock").display(),
    );
    let no_files = |_: &str| None;
    paths
        .config_policy()
        .check_config(config.as_bytes(), &no_files)
        .unwrap();
    let elsewhere = config.replace(&paths.run().display().to_string(), "/tmp");
    assert!(
        paths
            .config_policy()
            .check_config(elsewhere.as_bytes(), &no_files)
            .is_err()
    );
}
