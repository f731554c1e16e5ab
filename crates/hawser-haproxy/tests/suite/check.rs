//! `haproxy -c` on staged trees, with the real HAProxy.

use crate::support;

use hawser_haproxy::{ConfigPolicy, HaproxyError, PolicyError};

const VALID: &str = "\
global
    log stdout format raw local0

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend http
    bind 127.0.0.1:18080
    default_backend echo

backend echo
    server echo-1 127.0.0.1:8080
";

/// `VALID` with `extra` added to the frontend; returns it and the added line's number.
fn with_frontend_line(extra: &str) -> (String, u32) {
    let anchor = "    default_backend echo\n";
    let config = VALID.replace(anchor, &format!("    {extra}\n{anchor}"));
    let line = config
        .lines()
        .position(|line| line.trim() == extra)
        .expect("extra line not found");
    (config, u32::try_from(line + 1).unwrap())
}

#[tokio::test]
async fn minimal_config_passes_without_warnings() {
    let tree = support::tree(&[("haproxy.cfg", VALID)]);
    let report = support::real_haproxy()
        .check(&ConfigPolicy::default(), tree.path(), "haproxy.cfg")
        .await
        .unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[tokio::test]
async fn warnings_are_reported_on_success() {
    let config = VALID.replace("    timeout server 30s\n", "");
    let tree = support::tree(&[("haproxy.cfg", &config)]);
    let report = support::real_haproxy()
        .check(&ConfigPolicy::default(), tree.path(), "haproxy.cfg")
        .await
        .unwrap();
    assert!(!report.warnings.is_empty());
    assert!(
        report.warnings.iter().all(|w| w.starts_with("[WARNING] ")),
        "{:?}",
        report.warnings
    );
    assert!(
        report.warnings[0].contains("missing timeouts"),
        "{:?}",
        report.warnings
    );
}

#[tokio::test]
async fn unknown_directive_fails_with_haproxys_alert_and_line() {
    let (config, expected_line) = with_frontend_line("bogus_directive on");
    let tree = support::tree(&[("haproxy.cfg", &config)]);
    let error = support::real_haproxy()
        .check(&ConfigPolicy::default(), tree.path(), "haproxy.cfg")
        .await
        .unwrap_err();
    let HaproxyError::CheckFailed { output, file, line } = &error else {
        panic!("expected CheckFailed, got {error:?}");
    };
    assert_eq!(*line, Some(expected_line), "{output}");
    assert_eq!(file.as_deref(), Some("haproxy.cfg"));
    assert!(
        output.contains("unknown keyword 'bogus_directive'"),
        "{output}"
    );
    assert!(
        output.lines().all(|l| l.starts_with("[ALERT] ")),
        "{output}"
    );
    assert!(!output.contains("[NOTICE]"), "{output}");
    assert_eq!(error.metric_label(), "check_failed");
    assert!(
        error.to_string().starts_with(&format!(
            "haproxy rejected the configuration at haproxy.cfg:{expected_line}:\n"
        )),
        "{error}"
    );
}

#[tokio::test]
async fn relative_map_resolves_inside_the_tree() {
    let (config, _) =
        with_frontend_line("http-request set-var(txn.route) req.hdr(host),map(maps/x.map)");
    let tree = support::tree(&[
        ("haproxy.cfg", &config),
        ("maps/x.map", "demo.example.com echo\n"),
    ]);
    // The test's own working directory has no maps/: only `-C` makes this pass.
    assert!(!std::path::Path::new("maps/x.map").exists());
    support::real_haproxy()
        .check(&ConfigPolicy::default(), tree.path(), "haproxy.cfg")
        .await
        .unwrap();
}

#[tokio::test]
async fn missing_relative_map_fails_at_its_line() {
    let (config, expected_line) =
        with_frontend_line("http-request set-var(txn.route) req.hdr(host),map(maps/missing.map)");
    let tree = support::tree(&[("haproxy.cfg", &config), ("maps/x.map", "")]);
    let error = support::real_haproxy()
        .check(&ConfigPolicy::default(), tree.path(), "haproxy.cfg")
        .await
        .unwrap_err();
    let HaproxyError::CheckFailed { output, line, .. } = &error else {
        panic!("expected CheckFailed, got {error:?}");
    };
    assert_eq!(*line, Some(expected_line), "{output}");
    assert!(output.contains("maps/missing.map"), "{output}");
}

/// A tree without its configuration is refused before HAProxy runs: the
/// policy cannot read what it would judge.
#[tokio::test]
async fn missing_config_file_fails() {
    let tree = support::tree(&[]);
    let error = support::real_haproxy()
        .check(&ConfigPolicy::default(), tree.path(), "haproxy.cfg")
        .await
        .unwrap_err();
    let HaproxyError::Refused(PolicyError::Unreadable { path, .. }) = &error else {
        panic!("expected the policy to find nothing to read, got {error:?}");
    };
    assert!(path.ends_with("haproxy.cfg"), "{error}");
    assert!(error.to_string().contains("haproxy.cfg"), "{error}");
}
