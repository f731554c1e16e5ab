//! `hawser run`: a render HAProxy refuses is not applied. HAProxy's own
//! message is reported in `/status`, and what served before keeps serving:
//! the bootstrap configuration at start, the last good version later
//! (fixture `run_rejections/`).
//!
//! | refused by                           | when                      |
//! |--------------------------------------|---------------------------|
//! | `haproxy -c`: an unknown keyword      | at start                  |
//! | `haproxy -c`: a missing `use_backend` | after a manifest edit     |
//! | the reload: a port in use            | after a config edit and restart |
//! | the agent: a missing `chroot`        | at start, and after a config edit and restart |

use crate::support;

use std::net::SocketAddr;

use serde_json::Value;
use support::{Backends, Manifests, Run, RunOptions, fixture_dir, pod};

const HOST: &str = "rej.example.com";

/// A `global` directive with a typo: HAProxy's `-c` refuses it.
const TYPO_SNIPPET: &str =
    "templates:\n  snippets:\n    global-tuning: \"  tune.buffsize 32768\\n\"\n";

/// A user shortcut to the legacy Service's backend by its generated name:
/// valid only while an Ingress gives that Service a backend.
const LEGACY_SNIPPET: &str = "templates:\n  snippets:\n    frontend-legacy: \"  use_backend be_rej_legacy_http if { path_beg /old-legacy }\\n\"\n";

/// `haproxy -c` accepts this; HAProxy 3.0 then kills the new worker after a
/// reload reported success. The agent's own check must refuse it.
const JAIL_SNIPPET: &str =
    "templates:\n  snippets:\n    global-jail: \"  chroot /nonexistent-hawser-dir\\n\"\n";

/// A listener of the user's own on `addr`.
fn stats_snippet(addr: SocketAddr) -> String {
    format!(
        "templates:\n  snippets:\n    sections-stats: |\n      frontend stats\n        bind {addr}\n        \
         http-request return status 200 content-type text/plain string \"stats\"\n"
    )
}

/// The fixture's echo backends and its manifests, filled in.
fn fixture() -> (Backends, Manifests) {
    let backends = Backends::start(&[pod("rej", "web", "web-a"), pod("rej", "legacy", "legacy-a")]);
    let manifests = Manifests::from_fixture("run_rejections", &backends.vars());
    (backends, manifests)
}

/// Waits until the agent has refused a generation; returns `/status`.
async fn expect_rejection(run: &Run) -> Value {
    run.wait_for_status("a refused generation", |s| {
        s["agent"]["rejected"].as_u64().unwrap_or(0) >= 1
    })
    .await
}

/// The top-level `last_error` of `/status`, which must be set.
fn last_error(status: &Value) -> &str {
    status["last_error"]
        .as_str()
        .unwrap_or_else(|| panic!("/status has no last_error: {status:#}"))
}

/// Asserts that nothing listens on the HTTP port (the bootstrap
/// configuration binds only the health listener and the runtime API).
async fn expect_nothing_served(run: &Run) {
    assert!(
        tokio::net::TcpStream::connect(run.http).await.is_err(),
        "the HTTP port {} must not be served on the bootstrap configuration",
        run.http
    );
}

/// Asserts `/status` reports the bootstrap configuration, untouched: no
/// reload attempted, HAProxy never restarted.
fn expect_bootstrap(status: &Value) {
    let agent = &status["agent"];
    assert_eq!(status["ready"], false, "{status:#}");
    assert_eq!(agent["phase"], "bootstrap", "{status:#}");
    assert!(status["applied_generation"].is_null(), "{status:#}");
    assert_eq!(agent["last_outcome"]["kind"], "rejected", "{status:#}");
    assert_eq!(agent["reloads"], 0, "{status:#}");
    assert_eq!(agent["failed_reloads"], 0, "{status:#}");
    assert_eq!(agent["haproxy_restarts"], 0, "{status:#}");
}

/// Where `<state>/tree/<link>` points.
fn link(run: &Run, name: &str) -> std::path::PathBuf {
    std::fs::read_link(run.state_dir().join("tree").join(name))
        .unwrap_or_else(|e| panic!("tree/{name}: {e}"))
}

/// A run started with a config snippet, refused before serving anything.
struct RefusedAtStart {
    run: Run,
    status: Value,
    _backends: Backends,
    _manifests: Manifests,
}

impl RefusedAtStart {
    async fn with(snippet: &str) -> RefusedAtStart {
        let (backends, manifests) = fixture();
        let run = Run::launch_with(
            manifests.path(),
            RunOptions {
                config_tail: snippet.to_string(),
                ..RunOptions::default()
            },
        );
        let status = expect_rejection(&run).await;
        RefusedAtStart {
            run,
            status,
            _backends: backends,
            _manifests: manifests,
        }
    }

    fn error(&self) -> &str {
        last_error(&self.status)
    }
}

#[tokio::test]
async fn unknown_keyword_at_start_keeps_the_bootstrap_configuration() {
    let refused = RefusedAtStart::with(TYPO_SNIPPET).await;
    let (run, status, error) = (&refused.run, &refused.status, refused.error());
    assert!(
        error.contains("unknown keyword 'tune.buffsize' in 'global' section"),
        "/status should carry HAProxy's message: {error}"
    );
    assert_eq!(status["agent"]["last_outcome"]["error"], error);
    expect_bootstrap(status);
    run.expect_not_ready().await;
    run.expect_health(503).await;
    expect_nothing_served(run).await;
}

#[tokio::test]
async fn edit_that_removes_a_backend_a_snippet_uses_is_refused() {
    let (_backends, manifests) = fixture();
    let run = Run::start_with(
        manifests.path(),
        RunOptions {
            config_tail: LEGACY_SNIPPET.to_string(),
            ..RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;
    run.expect_routed_to(HOST, "/legacy/a", "legacy").await;
    run.expect_routed_to(HOST, "/old-legacy", "legacy").await;
    let workers = run.worker_pids().await;
    let serving = run.desired_generation().await;

    // The legacy Ingress goes: its Service no longer gets a backend, which
    // the snippet still names.
    manifests.remove("legacy.yaml");
    let status = run.expect_outcome_after(serving, "rejected").await;
    let error = last_error(&status);
    assert!(
        error.contains("unable to find required use_backend: 'be_rej_legacy_http'"),
        "/status should carry HAProxy's message: {error}"
    );
    assert_eq!(status["ready"], true, "{status:#}");
    assert_eq!(status["applied_generation"], serving, "{status:#}");
    assert_eq!(status["agent"]["failed_reloads"], 0, "{status:#}");
    // The previous version keeps serving, routes of the deleted Ingress included.
    run.expect_routed_to(HOST, "/legacy/a", "legacy").await;
    run.expect_routed_to(HOST, "/old-legacy", "legacy").await;
    run.expect_routed_to(HOST, "/", "web").await;
    assert_eq!(run.worker_pids().await, workers, "nothing was reloaded");

    // Put back, the Ingress makes a version HAProxy accepts again; it serves
    // nothing new, and the error is cleared.
    let refused = run.desired_generation().await;
    let legacy = std::fs::read_to_string(fixture_dir("run_rejections").join("legacy.yaml"))
        .expect("fixture legacy.yaml");
    run.write_manifest("legacy.yaml", &legacy);
    let status = run.expect_outcome_after(refused, "no-op").await;
    assert!(status["last_error"].is_null(), "{status:#}");
    assert_eq!(status["applied_generation"], refused + 1, "{status:#}");
    run.expect_routed_to(HOST, "/legacy/a", "legacy").await;
}

#[tokio::test]
async fn port_in_use_fails_the_reload_and_the_running_worker_keeps_serving() {
    let (_backends, manifests) = fixture();
    let mut run = Run::start(manifests.path()).await;
    run.wait_converged().await;
    run.expect_routed_to(HOST, "/", "web").await;
    let workers = run.worker_pids().await;
    let serving = run.desired_generation().await;

    // Another process holds the port the operator's new listener wants.
    let stats = Run::spare_address();
    let holder = std::net::TcpListener::bind(stats).expect("hold the stats port");
    // hawser restarts on the edited config and adopts the running HAProxy.
    run.kill9();
    run.write_config(&stats_snippet(stats));
    run.spawn();
    let status = run.expect_outcome_after(serving, "rejected").await;
    let error = last_error(&status);
    assert!(
        error.contains("HAProxy refused the configuration")
            && error.contains(&format!(
                "cannot bind socket (Address already in use) for [{stats}]"
            )),
        "/status should carry HAProxy's startup log: {error}"
    );
    let agent = &status["agent"];
    assert_eq!(agent["failed_reloads"], 1, "{status:#}");
    assert_eq!(agent["reloads"], 0, "{status:#}");
    assert_eq!(status["ready"], true, "{status:#}");
    assert_eq!(status["applied_generation"], serving, "{status:#}");
    // The worker that served before the restart still serves (the runtime
    // API answers from it: HAProxy 3.1 and later list it under `# old
    // workers` after a failed load, 3.0 under `# workers`), and `current`
    // is back on the last good version, so a restart would boot that.
    let info = run.runtime().show_info().await.expect("show info");
    assert_eq!(
        info.get("Pid").and_then(|pid| pid.parse().ok()),
        workers.first().copied(),
        "{info:?}"
    );
    run.expect_routed_to(HOST, "/", "web").await;
    assert_eq!(link(&run, "current"), link(&run, "lkg"));
    assert_eq!(agent["rollbacks"], 1, "{status:#}");
    run.expect_metric("hawser_failed_reloads_total", 1.0).await;
    run.expect_metric("hawser_rollbacks_total", 1.0).await;
    run.expect_metric("hawser_applies_total{kind=\"rejected\"}", 1.0)
        .await;

    // With the port free, the next change reloads onto the new listener.
    drop(holder);
    let refused = run.desired_generation().await;
    let edited = std::fs::read_to_string(manifests.path().join("web.yaml"))
        .expect("web.yaml")
        .replace("path: /\n", "path: /web\n");
    run.write_manifest("web.yaml", &edited);
    let status = run.expect_outcome_after(refused, "reload").await;
    assert!(status["last_error"].is_null(), "{status:#}");
    assert_eq!(status["agent"]["reloads"], 1, "{status:#}");
    run.expect_routed_to(HOST, "/web", "web").await;
    let answer = run.get_on(stats, "stats", "/").await;
    assert_eq!(answer.text(), "stats", "the new listener serves");
}

#[tokio::test]
async fn missing_chroot_at_start_is_refused_before_haproxy_loads_it() {
    let refused = RefusedAtStart::with(JAIL_SNIPPET).await;
    let (run, status, error) = (&refused.run, &refused.status, refused.error());
    assert!(
        error.contains("chroot directory \"/nonexistent-hawser-dir\" does not exist"),
        "/status should name the chroot: {error}"
    );
    expect_bootstrap(status);
    run.expect_not_ready().await;
    // HAProxy lives on, on the bootstrap configuration.
    assert_eq!(run.worker_pids().await.len(), 1);
    run.expect_health(503).await;
    expect_nothing_served(run).await;
}

#[tokio::test]
async fn missing_chroot_after_a_restart_is_refused_and_the_worker_keeps_serving() {
    let (_backends, manifests) = fixture();
    let mut run = Run::start(manifests.path()).await;
    run.wait_converged().await;
    let workers = run.worker_pids().await;
    let serving = run.desired_generation().await;
    let current = link(&run, "current");

    run.kill9();
    run.write_config(JAIL_SNIPPET);
    run.spawn();
    let status = run.expect_outcome_after(serving, "rejected").await;
    let error = last_error(&status);
    assert!(
        error.contains("chroot directory \"/nonexistent-hawser-dir\" does not exist"),
        "/status should name the chroot: {error}"
    );
    let agent = &status["agent"];
    assert_eq!(agent["reloads"], 0, "no reload may be tried: {status:#}");
    assert_eq!(agent["failed_reloads"], 0, "{status:#}");
    assert_eq!(agent["haproxy_restarts"], 0, "{status:#}");
    assert_eq!(status["ready"], true, "{status:#}");
    assert_eq!(status["applied_generation"], serving, "{status:#}");
    assert_eq!(link(&run, "current"), current, "the live tree is untouched");
    assert_eq!(run.worker_pids().await, workers);
    run.expect_routed_to(HOST, "/", "web").await;
    run.expect_health(200).await;
}

/// `/status` names the snippet HAProxy refused a line of, as `hawser validate` does.
#[tokio::test]
async fn refusal_names_the_snippet_at_fault() {
    let refused = RefusedAtStart::with(TYPO_SNIPPET).await;
    let error = refused.error();
    assert!(
        error.contains("snippet global-tuning"),
        "/status should name the snippet HAProxy refused a line of (DESIGN.md §1: \
         the error names the offending object where possible): {error}"
    );
}
