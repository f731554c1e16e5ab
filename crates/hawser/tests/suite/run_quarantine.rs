//! `hawser run`: one tenant's object that HAProxy refuses never freezes the
//! others (fixture `run_quarantine/`).
//!
//! Oracle: with a TLS Secret whose certificate OpenSSL refuses to load
//! (`legacy/legacy-tls`, whose chain holds a CA with a 768-bit key: hawser's
//! own checks accept it, `haproxy -c` does not) and an HTTPRoute whose path regex PCRE2 refuses
//! (`regex/wide`), every other object is served: the Secret is quarantined
//! and named in `/status` with HAProxy's reason, the route is rejected with
//! PCRE2's, the Ingress that used the Secret still routes over HTTP, and a
//! later change in another namespace (a second endpoint of `shop/web`)
//! applies. Once the Secret's owner replaces it, it is tried again.

use crate::support;

use serde_json::Value;
use support::{Backends, Manifests, Run, pod};

/// The strings of a `/status` list under `controller`.
fn listed<'a>(status: &'a Value, field: &str) -> Vec<&'a str> {
    status["controller"][field]
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_object_is_quarantined_and_every_other_change_applies() {
    let backends = Backends::start(&[
        pod("shop", "web", "web-a"),
        pod("shop", "web", "web-b"),
        pod("legacy", "app", "app-a"),
    ]);
    let manifests = Manifests::from_fixture("run_quarantine", &backends.vars());
    let run = Run::start(manifests.path()).await;

    let status = run
        .wait_for_status("the Secret with the weak CA quarantined", |s| {
            listed(s, "quarantined")
                .iter()
                .any(|q| q.starts_with("Secret legacy/legacy-tls"))
        })
        .await;
    let quarantined = listed(&status, "quarantined");
    assert!(
        quarantined.iter().any(|q| q.contains("ca key too small")),
        "HAProxy's reason is given: {quarantined:?}"
    );
    assert_eq!(
        quarantined.len(),
        1,
        "nothing else is left out: {quarantined:?}"
    );
    let diagnostics = listed(&status, "diagnostics");
    assert!(
        diagnostics
            .iter()
            .any(|d| d.starts_with("rejected: HTTPRoute regex/wide") && d.contains("PCRE2")),
        "the route PCRE2 refuses is rejected on its own: {diagnostics:#?}"
    );
    run.wait_converged().await;
    run.expect_metric("hawser_quarantined_objects", 1.0).await;
    run.expect_route_eventually("shop.example.com", "/", "web")
        .await;
    run.expect_route_eventually("legacy.example.com", "/", "app")
        .await;

    // Another namespace's change applies while the quarantine holds.
    let slice = std::fs::read_to_string(manifests.path().join("shop.yaml"))
        .unwrap()
        .replace(
            "    targetRef: { kind: Pod, name: web-a }\n",
            &format!(
                "    targetRef: {{ kind: Pod, name: web-a }}\n  - addresses: [\"{}\"]\n    \
                 conditions: {{ ready: true }}\n    targetRef: {{ kind: Pod, name: web-b }}\n",
                backends.pod("web-b").addr.ip()
            ),
        );
    run.write_manifest("shop.yaml", &slice);
    run.expect_pods_reached("shop.example.com", "/", &["web-a", "web-b"])
        .await;
    let status = run.status().await;
    assert_eq!(
        listed(&status, "quarantined").len(),
        1,
        "still quarantined while unchanged"
    );

    // Its owner replaces the Secret with one HAProxy loads: it is served again.
    run.write_manifest("legacy-tls.yaml", &replacement_secret());
    run.wait_for_status("the quarantine lifted", |s| {
        listed(s, "quarantined").is_empty()
    })
    .await;
    run.wait_converged().await;
    let response = run
        .get_tls(Some("legacy.example.com"), "legacy.example.com", "/")
        .await;
    assert_eq!(response.status, 200, "{:?}", response.text());
}

/// `legacy/legacy-tls` with a certificate HAProxy loads.
fn replacement_secret() -> String {
    let certificate = support::TestCertificate::self_signed("legacy.example.com");
    let (crt, key) = (certificate.cert_pem, certificate.key_pem);
    let indent = |pem: &str| {
        pem.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    };
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{ name: legacy-tls, namespace: legacy }}\n\
         type: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}",
        indent(&crt),
        indent(&key)
    )
}

/// `hawser validate` reports the quarantine `run` would make: the Secret
/// HAProxy refuses is named with HAProxy's reason, and the configuration
/// of the rest passes (exit 1: something is rejected).
#[test]
fn validate_names_what_would_be_quarantined() {
    let backends = Backends::start(&[pod("shop", "web", "web-a"), pod("legacy", "app", "app-a")]);
    let manifests = Manifests::from_fixture("run_quarantine", &backends.vars());
    let finished = support::run_to_end(&mut support::hawser_command([
        "validate".as_ref(),
        "--manifests".as_ref(),
        manifests.path().as_os_str(),
    ]));
    let output = finished.output();
    assert_eq!(finished.status.code(), Some(1), "{output}");
    assert!(
        output.contains("rejected: Secret legacy/legacy-tls: quarantined: HAProxy refuses")
            && output.contains("ca key too small"),
        "{output}"
    );
    assert!(
        output.contains("HAProxy 3."),
        "the rest is accepted: {output}"
    );
    assert!(output.contains("accepts the rest"), "{output}");
}

/// `hawser status` lists what HAProxy refuses and is left out, in text and
/// JSON, with HAProxy's reason.
#[test]
fn status_lists_what_would_be_quarantined() {
    let backends = Backends::start(&[pod("shop", "web", "web-a"), pod("legacy", "app", "app-a")]);
    let manifests = Manifests::from_fixture("run_quarantine", &backends.vars());
    let status = |output: &str| {
        support::run_to_end(&mut support::hawser_command([
            "status",
            "--manifests",
            manifests.path().to_str().unwrap(),
            "--output",
            output,
        ]))
    };
    let text = status("text");
    assert!(text.status.success(), "{}", text.describe());
    assert!(
        text.stdout.contains("Quarantined")
            && text
                .stdout
                .contains("Secret legacy/legacy-tls: quarantined: HAProxy refuses"),
        "{}",
        text.stdout
    );
    let json: Value = serde_json::from_str(&status("json").stdout).unwrap();
    assert_eq!(json["quarantined"][0]["object"], "Secret legacy/legacy-tls");
    assert!(
        json["quarantined"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ca key too small")),
        "{json:#}"
    );
}
