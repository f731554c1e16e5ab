//! The config policy in every mode, against the real binary: a HawserConfig
//! whose `base/haproxy.cfg` override is a Lua/config polyglot (`--[[ ... ]]`
//! around the configuration, a quoted `"lua-load"` of `haproxy.cfg` itself)
//! is refused by `hawser validate`, `hawser test` and `hawser run`, nothing
//! is served from it, and the marker its Lua would write never appears
//! (fixture `config_policy/`, manifests from `test_cli/`).

use crate::support;

use std::path::{Path, PathBuf};

use support::{Run, RunOptions, fixture_dir, hawser_command, run_to_end};

/// The override, as YAML under `templates:`, with the Lua's marker path.
fn polyglot(marker: &Path) -> String {
    let body = format!(
        r#"--[[
global
  "lua-load" haproxy.cfg
defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
frontend owned
  bind {{{{ settings.bind_address }}}}:{{{{ settings.http_port }}}}
  http-request return status 200 content-type text/plain string owned
--]]
local f = io.open("{}", "w")
f:write("ran")
f:close()
"#,
        marker.display()
    );
    let indented: String = body.lines().map(|l| format!("      {l}\n")).collect();
    format!("templates:\n  overrides:\n    base/haproxy.cfg: |\n{indented}")
}

/// A test the `hawser test` run would prove if it ran.
const TESTS: &str = "tests:\n  - name: storefront\n    request: { host: www.example.com, path: / }\n    expect: { status: 200 }\n";

fn manifests() -> PathBuf {
    fixture_dir("test_cli").join("manifests")
}

/// A temporary directory holding the config file and the marker's place.
fn hostile_config(with_tests: bool) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("lua-ran");
    let config = dir.path().join("hawser.yaml");
    let tail = if with_tests { TESTS } else { "" };
    std::fs::write(&config, polyglot(&marker) + tail).unwrap();
    (dir, config, marker)
}

fn expect_policy_refusal(output: &str) {
    assert!(
        output.contains("config policy") && output.contains("lua-load"),
        "the policy should name the line and why:\n{output}"
    );
    assert!(
        output.contains("override base/haproxy.cfg"),
        "the override should be named:\n{output}"
    );
}

#[test]
fn validate_refuses_the_polyglot_and_runs_nothing() {
    let (_dir, config, marker) = hostile_config(false);
    let mut command = hawser_command(["validate"]);
    command
        .arg("--manifests")
        .arg(manifests())
        .arg("--config")
        .arg(&config);
    let run = run_to_end(&mut command);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    expect_policy_refusal(&run.output());
    assert!(!marker.exists(), "the Lua ran:\n{}", run.describe());
}

#[test]
fn test_refuses_the_polyglot_and_runs_nothing() {
    let (_dir, config, marker) = hostile_config(true);
    let mut command = hawser_command(["test"]);
    command
        .arg("--manifests")
        .arg(manifests())
        .arg("--config")
        .arg(&config);
    let run = run_to_end(&mut command);
    assert!(!run.status.success(), "{}", run.describe());
    expect_policy_refusal(&run.output());
    assert!(!marker.exists(), "the Lua ran:\n{}", run.describe());
}

#[tokio::test]
async fn run_refuses_the_polyglot_serves_nothing_and_runs_nothing() {
    let marker_dir = tempfile::tempdir().unwrap();
    let marker = marker_dir.path().join("lua-ran");
    let run = Run::launch_with(
        &manifests(),
        RunOptions {
            config_tail: polyglot(&marker),
            ..RunOptions::default()
        },
    );
    // Refused where it is first judged (the controller's gate, or else the
    // agent), and reported in /status.
    let status = run
        .wait_for_status("the config policy's refusal", |s| {
            s["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("config policy") && e.contains("lua-load"))
        })
        .await;
    assert!(status["applied_generation"].is_null(), "{status:#}");
    run.expect_not_ready().await;
    assert!(
        tokio::net::TcpStream::connect(run.http).await.is_err(),
        "nothing may be served from the polyglot"
    );
    assert!(!marker.exists(), "the Lua ran:\n{}", run.output());
}
