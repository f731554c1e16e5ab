//! `hawser controller`'s command line: one source, the agents it needs,
//! and a clear error when the cluster cannot be reached.

use crate::support::{hawser_command, run_to_end};

#[test]
fn a_source_is_required_and_manifests_need_agents() {
    let dir = tempfile::tempdir().unwrap();
    let mut neither = hawser_command(["controller", "--tls-dir"]);
    neither.arg(dir.path());
    let run = run_to_end(&mut neither);
    assert_eq!(run.status.code(), Some(2), "{}", run.describe());
    assert!(run.stderr.contains("--manifests"), "{}", run.describe());

    let mut no_agents = hawser_command(["controller", "--tls-dir"]);
    no_agents.arg(dir.path()).arg("--manifests").arg(dir.path());
    let run = run_to_end(&mut no_agents);
    assert_eq!(run.status.code(), Some(64), "{}", run.describe());
    assert!(
        run.stderr.contains("at least one --agent"),
        "{}",
        run.describe()
    );
}

#[test]
fn kubernetes_without_a_cluster_is_a_configuration_error() {
    let home = tempfile::tempdir().unwrap();
    let mut command = hawser_command(["controller", "--kubernetes", "--tls-dir"]);
    command
        .arg(home.path())
        .env("HOME", home.path())
        .env("KUBECONFIG", home.path().join("absent-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT");
    let run = run_to_end(&mut command);
    assert_eq!(run.status.code(), Some(64), "{}", run.describe());
    assert!(
        run.stderr
            .contains("--kubernetes needs an in-cluster service account or a kubeconfig"),
        "{}",
        run.describe()
    );
}
