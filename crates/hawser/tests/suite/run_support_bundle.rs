//! `hawser support-bundle` against `hawser run` serving an Ingress with a
//! real TLS Secret (fixture `run_support_bundle/`): the bundle has every
//! section and lists the certificate file, and no byte of the private key
//! leaves the tree; with HAProxy's sockets missing the bundle names the
//! failure and keeps the rest; with nothing reachable it exits 1.

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::support::{
    Backends, Finished, Manifests, Run, TestCertificate, hawser_command, pod, run_to_end,
};

const HOST: &str = "site.example.com";
const SECTIONS: [&str; 6] = [
    "status",
    "metrics",
    "apply_outcomes",
    "tree",
    "haproxy_info",
    "haproxy_proc",
];

/// `hawser support-bundle` to stdout.
fn support_bundle(state_dir: &Path, admin: &str) -> Finished {
    run_to_end(&mut hawser_command([
        "support-bundle".as_ref(),
        "--state-dir".as_ref(),
        state_dir.as_os_str(),
        "--admin".as_ref(),
        admin.as_ref(),
        "--out".as_ref(),
        "-".as_ref(),
    ]))
}

/// The bundle a successful run printed, parsed.
fn expect_bundle(finished: &Finished) -> Value {
    assert!(finished.status.success(), "{}", finished.describe());
    serde_json::from_str(&finished.stdout)
        .unwrap_or_else(|e| panic!("the bundle is not JSON: {e}\n{}", finished.describe()))
}

fn expect_collected<'a>(bundle: &'a Value, section: &str) -> &'a Value {
    let s = &bundle["sections"][section];
    assert_eq!(s["ok"], true, "section {section}: {s:#}");
    &s["content"]
}

fn expect_failed<'a>(bundle: &'a Value, section: &str) -> &'a str {
    let s = &bundle["sections"][section];
    assert_eq!(s["ok"], false, "section {section}: {s:#}");
    s["error"]
        .as_str()
        .unwrap_or_else(|| panic!("section {section} names no error: {s:#}"))
}

/// Every form the key could leak in: its PEM, the PEM's base64 body whole
/// and line by line, and the Secret's `data.tls.key` (the PEM in base64).
fn key_forms(key_pem: &str) -> Vec<String> {
    let body: Vec<&str> = key_pem
        .lines()
        .filter(|line| !line.starts_with("-----") && !line.is_empty())
        .collect();
    assert!(!body.is_empty(), "the key has a body");
    let mut forms = vec![
        key_pem.trim().to_string(),
        body.concat(),
        base64::engine::general_purpose::STANDARD.encode(key_pem),
    ];
    forms.extend(body.iter().map(|line| line.to_string()));
    forms
}

fn expect_no_key(bundle_text: &str, key_pem: &str) {
    for form in key_forms(key_pem) {
        assert!(
            !bundle_text.contains(&form),
            "the bundle holds key material: {form:?}"
        );
    }
    assert!(
        !bundle_text.contains("PRIVATE KEY"),
        "the bundle names a private key block"
    );
}

#[tokio::test]
async fn bundle_has_every_section_lists_the_certificate_and_never_its_key() {
    let certificate = TestCertificate::self_signed(HOST);
    let backends = Backends::start(&[pod("bundle", "site", "site-a")]);
    let mut vars = backends.vars();
    vars.insert("SITE_TLS_CRT".to_string(), certificate.cert_yaml());
    vars.insert("SITE_TLS_KEY".to_string(), certificate.key_yaml());
    let manifests = Manifests::from_fixture("run_support_bundle", &vars);
    let run = Run::start(manifests.path()).await;
    let status = run.wait_converged().await;
    let applied = status["applied_generation"].clone();

    let finished = support_bundle(&run.state_dir(), &run.admin.to_string());
    let bundle = expect_bundle(&finished);
    assert!(
        finished.stderr.contains("every section collected"),
        "{}",
        finished.describe()
    );
    assert_eq!(bundle["bundle"]["format"], "hawser-support-bundle/1");
    assert!(
        bundle["bundle"]["made_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(
        bundle["bundle"]["hawser_version"],
        env!("CARGO_PKG_VERSION")
    );
    for section in SECTIONS {
        expect_collected(&bundle, section);
    }
    assert_eq!(
        expect_collected(&bundle, "status")["applied_generation"],
        applied
    );
    let metrics = expect_collected(&bundle, "metrics");
    assert!(
        metrics.as_array().is_some_and(|lines| lines
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.starts_with("# TYPE")))),
        "metrics: {metrics:#}"
    );
    let outcomes = expect_collected(&bundle, "apply_outcomes");
    assert_eq!(
        outcomes[0]["generation"], applied,
        "newest first: {outcomes:#}"
    );
    let info = expect_collected(&bundle, "haproxy_info");
    assert!(info["Pid"].as_str().is_some(), "show info: {info:#}");
    let procs = expect_collected(&bundle, "haproxy_proc");
    assert_eq!(
        procs["workers"].as_array().map(Vec::len),
        Some(1),
        "{procs:#}"
    );

    let tree = expect_collected(&bundle, "tree");
    let current = format!("v{:020}", applied.as_u64().expect("a generation"));
    assert_eq!(tree["current"], current.as_str(), "{tree:#}");
    assert_eq!(tree["lkg"], current.as_str(), "{tree:#}");
    let files = tree["served"]["files"].as_array().expect("served files");
    let cert = files
        .iter()
        .find(|f| {
            f["kind"] == "certificate" && f["path"].as_str().is_some_and(|p| p.contains("site-tls"))
        })
        .unwrap_or_else(|| panic!("no certificate file listed: {tree:#}"));
    let on_disk = std::fs::read(
        run.current_tree()
            .join(cert["path"].as_str().expect("path")),
    )
    .expect("the certificate file");
    assert_eq!(cert["size"], on_disk.len());
    assert_eq!(cert["digest"], hex::encode(Sha256::digest(&on_disk)));
    assert!(
        files.iter().any(|f| f["path"] == "haproxy.cfg"),
        "haproxy.cfg is listed: {tree:#}"
    );

    expect_no_key(&finished.stdout, &certificate.key_pem);
}

#[tokio::test]
async fn bundle_without_haproxy_sockets_names_the_failure_and_keeps_the_rest() {
    let certificate = TestCertificate::self_signed(HOST);
    let backends = Backends::start(&[pod("bundle", "site", "site-a")]);
    let mut vars = backends.vars();
    vars.insert("SITE_TLS_CRT".to_string(), certificate.cert_yaml());
    vars.insert("SITE_TLS_KEY".to_string(), certificate.key_yaml());
    let manifests = Manifests::from_fixture("run_support_bundle", &vars);
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;
    // The served tree, but no run/ directory: HAProxy cannot be reached.
    let state = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(run.state_dir().join("tree"), state.path().join("tree"))
        .expect("link the tree");

    let finished = support_bundle(state.path(), &run.admin.to_string());
    let bundle = expect_bundle(&finished);
    for section in ["status", "metrics", "apply_outcomes", "tree"] {
        expect_collected(&bundle, section);
    }
    for (section, socket) in [
        ("haproxy_info", "admin.sock"),
        ("haproxy_proc", "master.sock"),
    ] {
        let error = expect_failed(&bundle, section);
        assert!(
            error.contains(socket) && error.contains("No such file"),
            "{section}: {error}"
        );
    }
    assert!(
        finished.stderr.contains("4 of 6 sections collected")
            && finished.stderr.contains("haproxy_info, haproxy_proc"),
        "{}",
        finished.describe()
    );
    expect_no_key(&finished.stdout, &certificate.key_pem);
}

#[test]
fn nothing_reachable_writes_no_bundle_and_names_what_was_tried() {
    // A port nobody listens on once the probe listener is dropped.
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let state = tempfile::tempdir().expect("tempdir");
    let finished = support_bundle(state.path(), &format!("127.0.0.1:{port}"));
    assert_eq!(finished.status.code(), Some(1), "{}", finished.describe());
    assert!(finished.stdout.is_empty(), "{}", finished.describe());
    for section in SECTIONS {
        assert!(
            finished.stderr.contains(&format!("  {section} (")),
            "{section} not named: {}",
            finished.describe()
        );
    }
    assert!(finished.stderr.contains("nothing could be collected"));
}
