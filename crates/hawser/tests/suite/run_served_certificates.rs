//! `hawser run` serves a TLS Secret whose certificate clients refuse but
//! HAProxy accepts (expired, or for other names) instead of falling back to
//! the default certificate, and says so: a warning in `/status`, the
//! Secret's notAfter there, and the seconds left in
//! `hawser_served_certificate_expiry_seconds` (fixture
//! `run_served_certificates/`).
//!
//! Oracle: the certificate a real TLS client is handed, by its subject; the
//! expiry gauge's sign against the dates the test wrote into the
//! certificates.

use serde_json::Value;

use crate::support;

use support::{Backends, Manifests, Run, TestCertificate, pod};

/// 2021-01-01T00:00:00Z, when the expired certificate expired.
const EXPIRED_AT: i64 = 1_609_459_200;

fn expiry_series(secret: &str) -> String {
    format!("hawser_served_certificate_expiry_seconds{{namespace=\"tls\",secret=\"{secret}\"}}")
}

/// The diagnostics of `/status` that mention `text`.
fn diagnostics_with(status: &Value, text: &str) -> Vec<String> {
    status["controller"]["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|line| line.contains(text))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn expired_and_misnamed_certificates_are_served_with_warnings_and_their_expiry() {
    let backends = Backends::start(&[pod("tls", "site", "site-0")]);
    let mut vars = backends.vars();
    let expired = TestCertificate::made(
        "expired certificate",
        &["old.example.com"],
        (2020, 1, 1),
        (2021, 1, 1),
    );
    let other_names = TestCertificate::made(
        "certificate for other names",
        &["other.example.com"],
        (2020, 1, 1),
        (2100, 1, 1),
    );
    for (prefix, cert) in [("EXPIRED", &expired), ("OTHER_NAMES", &other_names)] {
        vars.insert(format!("{prefix}_CRT"), cert.cert_yaml());
        vars.insert(format!("{prefix}_KEY"), cert.key_yaml());
    }
    let manifests = Manifests::from_fixture("run_served_certificates", &vars);
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;

    for (host, subject) in [
        ("old.example.com", "expired certificate"),
        ("shop.example.com", "certificate for other names"),
    ] {
        let response = run.get_tls(Some(host), host, "/").await;
        assert_eq!(
            response.tls().subject_cn.as_deref(),
            Some(subject),
            "SNI {host}"
        );
        assert_eq!(response.status, 200, "{host}: {}", response.text());
        assert_eq!(response.echo().service, "site");
    }

    let status = run.status().await;
    let expired_lines =
        diagnostics_with(&status, "its certificate expired at 2021-01-01T00:00:00Z");
    assert_eq!(
        expired_lines,
        [
            "warning: Ingress tls/old: TLS Secret tls/expired-tls: its certificate expired at 2021-01-01T00:00:00Z; served anyway for old.example.com (refusing it would serve the default certificate, which fails every client): clients refuse it until it is renewed",
            "warning: Secret tls/expired-tls: TLS Secret tls/expired-tls: its certificate expired at 2021-01-01T00:00:00Z; served anyway for old.example.com (refusing it would serve the default certificate, which fails every client): clients refuse it until it is renewed",
        ],
        "{status:#}"
    );
    let misnamed = diagnostics_with(&status, "does not cover shop.example.com");
    assert_eq!(misnamed.len(), 2, "{status:#}");
    assert!(
        misnamed[0].starts_with("warning: Ingress tls/misnamed: TLS Secret tls/other-names-tls"),
        "{misnamed:?}"
    );
    assert!(
        misnamed[0].contains("(its names: other.example.com)"),
        "{misnamed:?}"
    );
    assert!(
        diagnostics_with(&status, "rejected").is_empty(),
        "{status:#}"
    );
    let served = &status["controller"]["served_certificates"];
    assert_eq!(
        served["tls/expired-tls"]["notAfter"], EXPIRED_AT,
        "{served:#}"
    );
    assert_eq!(
        served["tls/expired-tls"]["hosts"],
        serde_json::json!(["old.example.com"])
    );
    assert_eq!(
        served["tls/expired-tls"]["warnings"][0]["reason"],
        "CertificateExpired"
    );
    assert_eq!(
        served["tls/other-names-tls"]["warnings"][0]["reason"],
        "CertificateHostMismatch"
    );

    let left = metric_eventually(&run, &expiry_series("expired-tls")).await;
    assert!(left < 0.0, "expired: {left}");
    let left = metric_eventually(&run, &expiry_series("other-names-tls")).await;
    assert!(left > 0.0, "valid until 2100: {left}");
}

/// `series` once `/metrics` shows it (the metrics follow the render a
/// moment after `/status` does).
async fn metric_eventually(run: &Run, series: &str) -> f64 {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(value) = run.metric(series).await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "/metrics never showed {series}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
