//! `hawser run` whose stderr nobody reads (fixture `run_stalled_log/`): a
//! log reader that stalls (a container runtime, a log shipper) fills the
//! pipe, and a process that wrote its log in place would stop at its next
//! line. hawser starts, serves, and takes every change to traffic all the
//! same, logging at `trace` into a pipe no one reads (a build that wrote
//! its log in place stopped partway through the changes). Lines it cannot queue
//! are dropped and counted in `hawser_log_lines_dropped_total`.

use crate::support;

use std::process::Command;

use support::{Backends, Manifests, Run, RunOptions, pod};

/// Changes made while the log is stalled.
const CHANGES: usize = 20;

fn ingress(index: usize) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\n\
         metadata: {{ name: added-{index}, namespace: stalled }}\n\
         spec:\n  ingressClassName: hawser\n  rules:\n    - host: added-{index}.example.com\n\
         \x20     http:\n        paths:\n          - path: /\n            pathType: Prefix\n\
         \x20           backend: {{ service: {{ name: web, port: {{ number: 80 }} }} }}\n"
    )
}

#[tokio::test]
async fn changes_reach_traffic_while_nobody_reads_the_log() {
    let backends = Backends::start(&[pod("stalled", "web", "web-a")]);
    let manifests = Manifests::from_fixture("run_stalled_log", &backends.vars());
    // A named pipe that the shell opens for reading and writing (so the
    // open does not wait for a reader) and hands to hawser as its stderr:
    // its read end is held, never read, and a write blocks once it is full.
    let pipes = tempfile::tempdir().expect("a directory");
    let fifo = pipes.path().join("stderr");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let options = RunOptions {
        launcher: vec![
            "sh".to_string(),
            "-c".to_string(),
            r#"exec 3<>"$HAWSER_TEST_STDERR"; exec "$0" "$@" 2>&3"#.to_string(),
        ],
        env: vec![
            ("HAWSER_TEST_STDERR".to_string(), fifo.display().to_string()),
            ("HAWSER_LOG".to_string(), "trace".to_string()),
        ],
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    run.expect_routed_to("web.example.com", "/", "web").await;

    for index in 0..CHANGES {
        run.write_manifest(&format!("added-{index}.yaml"), &ingress(index));
        let host = format!("added-{index}.example.com");
        run.expect_route_eventually(&host, "/", "web").await;
    }
    let dropped = run.metric("hawser_log_lines_dropped_total").await;
    assert!(dropped.is_some(), "the dropped lines are counted");
}
