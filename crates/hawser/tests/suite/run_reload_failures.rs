//! `hawser run`: reloads that fail, again and again, between versions that
//! apply (fixture `run_reload_failures/`). A failed version is one HAProxy
//! cannot load although `haproxy -c` passes it: a Gateway listener on a
//! port another process holds.
//!
//! ```text
//!  round r: + listener on a held port ─► reload fails: rejected, lkg stays, the old worker serves
//!           − listener, path /v<r+1>  ─► applies: lkg moves on, /v<r+1> answers
//! ```
//!
//! Oracle: after each failure `failed_reloads` grew by one, `current` and
//! `lkg` name the version that served before, whose worker (the last one
//! verified) answers;
//! after each success both name the new version and it answers. A failed
//! version is not tried again on its own: `failed_reloads` stays put while
//! nothing changes.

use crate::support;

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use support::{Backends, Manifests, Run, pod};

const ROUNDS: u64 = 4;

fn link(run: &Run, name: &str) -> PathBuf {
    std::fs::read_link(run.state_dir().join("tree").join(name))
        .unwrap_or_else(|e| panic!("tree/{name}: {e}"))
}

/// The Gateway, with a listener on `port` when given.
fn gateway(port: Option<u16>) -> String {
    let mut text = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n\
                    metadata: { name: edge, namespace: flaky }\n\
                    spec:\n  gatewayClassName: hawser\n  listeners:\n    \
                    - { name: http, port: 80, protocol: HTTP }\n"
        .to_string();
    if let Some(port) = port {
        text.push_str(&format!(
            "    - {{ name: taken, port: {port}, protocol: HTTP }}\n"
        ));
    }
    text
}

async fn apply(run: &Run, file: &str, text: &str, outcome: &str) -> Value {
    let before = run.desired_generation().await;
    run.write_manifest(file, text);
    run.expect_outcome_after(before, outcome).await
}

#[tokio::test]
async fn failed_reloads_between_good_versions_never_move_lkg() {
    let backends = Backends::start(&[pod("flaky", "web", "web-a")]);
    let manifests = Manifests::from_fixture("run_reload_failures", &backends.vars());
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;
    run.expect_routed_to("web.example.com", "/v0", "web").await;
    let web = std::fs::read_to_string(run.manifests().join("web.yaml")).expect("web.yaml");

    for round in 0..ROUNDS {
        let good = link(&run, "lkg");
        assert_eq!(link(&run, "current"), good, "round {round}");
        let worker = run.status().await["agent"]["worker_pid"].clone();

        let holder = TcpListener::bind(Run::spare_address()).expect("hold a port");
        let port = holder.local_addr().expect("held address").port();
        let status = apply(&run, "gateway.yaml", &gateway(Some(port)), "rejected").await;
        let error = status["last_error"].as_str().unwrap_or_default();
        assert!(
            error.contains("cannot bind socket"),
            "round {round}: {error}\n{status:#}"
        );
        assert_eq!(status["agent"]["failed_reloads"], round + 1, "{status:#}");
        assert_eq!(link(&run, "lkg"), good, "round {round}: lkg stays");
        assert_eq!(
            link(&run, "current"),
            good,
            "round {round}: current goes back"
        );
        assert_eq!(
            status["agent"]["worker_pid"], worker,
            "round {round}: {status:#}"
        );
        let path = format!("/v{round}");
        run.expect_routed_to("web.example.com", &path, "web").await;

        // The next good version applies, and becomes the last good one.
        let next = format!("/v{}", round + 1);
        run.write_manifest("gateway.yaml", &gateway(None));
        run.write_manifest(
            "web.yaml",
            &web.replace("path: /v0", &format!("path: {next}")),
        );
        run.expect_route_eventually("web.example.com", &next, "web")
            .await;
        let status = run.wait_converged().await;
        assert!(status["last_error"].is_null(), "round {round}: {status:#}");
        assert_ne!(link(&run, "lkg"), good, "round {round}: lkg moves on");
        assert_eq!(link(&run, "current"), link(&run, "lkg"), "round {round}");
        drop(holder);
    }

    // Nothing tries a failed version again by itself.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status = run.status().await;
    assert_eq!(status["agent"]["failed_reloads"], ROUNDS, "{status:#}");
    assert_eq!(status["agent"]["rollbacks"], ROUNDS, "{status:#}");
    run.expect_metric("hawser_failed_reloads_total", ROUNDS as f64)
        .await;
}
