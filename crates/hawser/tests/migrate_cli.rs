//! `hawser migrate` on a namespace as ingress-nginx served it (fixture
//! `migrate/`): the report names every annotation's fate and each
//! Ingress's (a snapshot), exits 1 because one Ingress would be refused,
//! and the `hawser test` cases it writes pass against the real HAProxy.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

mod support;

use support::{Manifests, TestCertificate, Vars, hawser_command, run_to_end};

fn manifests() -> Manifests {
    let cert = TestCertificate::self_signed("www.example.com");
    let mut vars = Vars::new();
    vars.insert("WWW_TLS_CRT".into(), cert.cert_yaml());
    vars.insert("WWW_TLS_KEY".into(), cert.key_yaml());
    Manifests::from_fixture("migrate", &vars)
}

#[test]
fn the_report_names_each_annotations_fate_and_exits_1_for_a_refusal() {
    let manifests = manifests();
    let mut command = hawser_command(["migrate", "--from", "nginx"]);
    command.arg("--manifests").arg(manifests.path());
    let run = run_to_end(&mut command);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    insta::assert_snapshot!("report", run.stdout);

    let mut command = hawser_command(["migrate", "--output", "json"]);
    command.arg("--manifests").arg(manifests.path());
    let json: serde_json::Value = serde_json::from_str(&run_to_end(&mut command).stdout).unwrap();
    let api = json["ingresses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "api")
        .unwrap();
    assert_eq!(
        api["annotations"]["nginx.ingress.kubernetes.io/whitelist-source-range"]["verdict"],
        "served"
    );
    assert_eq!(
        api["annotations"]["nginx.ingress.kubernetes.io/limit-rps"]["verdict"],
        "differs"
    );
}

#[test]
fn the_tests_it_writes_pass_against_the_real_haproxy() {
    let manifests = manifests();
    let tests = tempfile::NamedTempFile::new().unwrap();
    let mut command = hawser_command(["migrate"]);
    command
        .arg("--manifests")
        .arg(manifests.path())
        .arg("--tests")
        .arg(tests.path());
    run_to_end(&mut command);
    let written = std::fs::read_to_string(tests.path()).unwrap();
    assert!(
        written.contains("ingressController: k8s.io/ingress-nginx"),
        "{written}"
    );

    let mut command = hawser_command(["test"]);
    command
        .arg("--manifests")
        .arg(manifests.path())
        .arg("--config")
        .arg(tests.path());
    let run = run_to_end(&mut command);
    assert!(run.status.success(), "{written}\n{}", run.describe());
    for name in [
        "PASS shop/admin admin.example.com/",
        "PASS shop/api api.example.com/v1",
        "PASS shop/old old.example.com/",
        "PASS shop/partners partners.example.com/",
        "PASS shop/www www.example.com/",
    ] {
        assert!(run.stdout.contains(name), "{name}\n{}", run.describe());
    }
    assert!(
        !run.stdout.contains("legacy"),
        "a refused Ingress has no test"
    );
}
