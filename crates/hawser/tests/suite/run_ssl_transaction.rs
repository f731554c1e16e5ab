//! `hawser run`: an SSL transaction left open in HAProxy (an agent killed
//! between `set ssl cert` and `commit`) is aborted when the agent starts
//! again, so it blocks no later certificate update; certificate rotations
//! and map changes then apply at runtime, completely; a renewal does not
//! wait behind a paced reload (fixture `run_ssl_transaction/`).

use crate::support::{
    Backends, Manifests, Run, RunOptions, TestCertificate, Vars, expect_certificate, fixture_dir,
    open_ssl_transaction, pod,
};

const A_HOST: &str = "a.example.com";
const B_HOST: &str = "b.example.com";
const A_CERT: &str = "certs/ssl_a-tls.pem";
const B_CERT: &str = "certs/ssl_b-tls.pem";

/// Two more hosts on the same Service, without TLS: map changes only.
const MORE_HOSTS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: more, namespace: ssl }
spec:
  ingressClassName: hawser
  rules:
    - host: c.example.com
      http:
        paths:
          - { path: /, pathType: Prefix, backend: { service: { name: site, port: { name: http } } } }
          - { path: /shop, pathType: Exact, backend: { service: { name: site, port: { name: http } } } }
    - host: d.example.com
      http:
        paths:
          - { path: /, pathType: Prefix, backend: { service: { name: site, port: { name: http } } } }
"#;

/// The fixture's `secrets.yaml` with these certificates.
fn secrets_vars(a: &TestCertificate, b: &TestCertificate) -> Vars {
    let mut vars = Vars::new();
    for (prefix, cert) in [("A_TLS", a), ("B_TLS", b)] {
        vars.insert(format!("{prefix}_CRT"), cert.cert_yaml());
        vars.insert(format!("{prefix}_KEY"), cert.key_yaml());
    }
    vars
}

fn secrets_yaml(a: &TestCertificate, b: &TestCertificate) -> String {
    let mut text = std::fs::read_to_string(fixture_dir("run_ssl_transaction").join("secrets.yaml"))
        .expect("fixture secrets.yaml");
    for (name, value) in secrets_vars(a, b) {
        text = text.replace(&format!("${{{name}}}"), &value);
    }
    text
}

/// The fixture with certificates `a` and `b`, its pod, and `hawser run`
/// serving it with `options`.
async fn serve(
    a: &TestCertificate,
    b: &TestCertificate,
    options: RunOptions,
) -> (Backends, Manifests, Run) {
    let backends = Backends::start(&[pod("ssl", "site", "site-a")]);
    let mut vars = backends.vars();
    vars.extend(secrets_vars(a, b));
    let manifests = Manifests::from_fixture("run_ssl_transaction", &vars);
    let run = Run::start_with(manifests.path(), options).await;
    (backends, manifests, run)
}

#[tokio::test]
async fn transaction_left_open_is_aborted_at_start_and_updates_apply_again() {
    let a = TestCertificate::with_cn(A_HOST, A_HOST);
    let b = TestCertificate::with_cn(B_HOST, B_HOST);
    let (_backends, _manifests, mut run) = serve(&a, &b, RunOptions::default()).await;
    run.wait_converged().await;
    expect_certificate(&run, A_HOST, A_HOST).await;
    expect_certificate(&run, B_HOST, B_HOST).await;
    let workers = run.worker_pids().await;

    // An agent dies between `set ssl cert` and `commit`: the transaction
    // stays open in HAProxy, and would refuse every other certificate's.
    let uncommitted = TestCertificate::with_cn(A_HOST, "a.example.com, never committed");
    run.runtime()
        .set_ssl_cert(
            A_CERT,
            &format!("{}{}", uncommitted.cert_pem, uncommitted.key_pem),
        )
        .await
        .expect("open a transaction");
    assert_eq!(open_ssl_transaction(&run).await.as_deref(), Some(A_CERT));
    run.kill9();
    run.spawn();
    run.expect_ready().await;
    // The restarted controller renders again (nothing changed): wait for it.
    run.wait_converged().await;
    assert_eq!(
        open_ssl_transaction(&run).await,
        None,
        "the restarted agent aborts the transaction\n{}",
        run.output()
    );
    assert_eq!(run.worker_pids().await, workers, "HAProxy was adopted");
    // Aborted, not committed: a.example.com keeps its certificate.
    expect_certificate(&run, A_HOST, A_HOST).await;

    // Rotating the other certificate works, at runtime.
    let rotated = TestCertificate::with_cn(B_HOST, "b.example.com, rotated");
    let before = run.desired_generation().await;
    run.write_manifest("secrets.yaml", &secrets_yaml(&a, &rotated));
    let status = run.expect_outcome_after(before, "runtime").await;
    let summary = status["agent"]["last_outcome"]["summary"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        summary,
        format!("update certificate {B_CERT}"),
        "{status:#}"
    );
    expect_certificate(&run, B_HOST, "b.example.com, rotated").await;
    expect_certificate(&run, A_HOST, A_HOST).await;
    assert_eq!(open_ssl_transaction(&run).await, None);

    // A new host on the same Service is a map change, applied at runtime:
    // the live map then holds every entry of the applied map file.
    let before = run.desired_generation().await;
    run.write_manifest("more.yaml", MORE_HOSTS);
    let status = run.expect_outcome_after(before, "runtime").await;
    assert_eq!(status["agent"]["reloads"], 0, "{status:#}");
    let summary = status["agent"]["last_outcome"]["summary"]
        .as_str()
        .unwrap_or_default();
    assert!(
        summary
            .split(", ")
            .all(|op| ["replace", "edit", "add", "set", "del"]
                .iter()
                .any(|verb| op.starts_with(&format!("{verb} map maps/")))),
        "only maps change: {status:#}"
    );
    // Entry for entry, the live maps are the applied map files: every
    // route of the four hosts, the Exact one included.
    run.expect_live_maps_applied().await;
    let keys: Vec<String> = run
        .applied_maps()
        .into_iter()
        .flat_map(|(_, entries)| entries.into_iter().map(|(key, _)| key))
        .collect();
    for route in [
        "a.example.com/",
        "b.example.com/",
        "c.example.com/",
        "c.example.com/shop",
        "d.example.com/",
    ] {
        assert!(
            keys.iter().any(|k| k.starts_with(route)),
            "no map entry for {route}: {keys:?}"
        );
    }
    run.expect_routed_to("c.example.com", "/shop", "site").await;
    for host in [
        "a.example.com",
        "b.example.com",
        "c.example.com",
        "d.example.com",
    ] {
        run.expect_routed_to(host, "/", "site").await;
    }
    assert_eq!(run.worker_pids().await, workers, "no reload");
}

/// A reload waiting for its slot (`--min-reload-interval-ms`, here far
/// longer than the test) does not hold back a certificate renewed in place:
/// it is changed at runtime meanwhile.
///
/// Oracle: the reload cannot happen before the test ends, so the renewed
/// certificate can only be served through the runtime API; the applied
/// generation, the reload count and the worker PIDs prove no reload
/// happened.
#[tokio::test]
async fn a_certificate_renewal_does_not_wait_behind_a_paced_reload() {
    let a = TestCertificate::with_cn(A_HOST, A_HOST);
    let b = TestCertificate::with_cn(B_HOST, B_HOST);
    let options = RunOptions {
        args: vec!["--min-reload-interval-ms".into(), "600000".into()],
        ..RunOptions::default()
    };
    // Its first version is a reload: the next may come ten minutes later.
    let (_backends, _manifests, run) = serve(&a, &b, options).await;
    let status = run.wait_converged().await;
    let applied = status["applied_generation"].clone();
    let workers = run.worker_pids().await;

    // A default backend is named in haproxy.cfg itself: a reload, paced.
    run.write_manifest(
        "other.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: { name: other, namespace: ssl }\n\
         spec:\n  ingressClassName: hawser\n  defaultBackend: { service: { name: site, port: { name: http } } }\n",
    );
    run.wait_for_status("the reload rendered", |s| {
        s["desired_generation"].as_u64() > applied.as_u64()
    })
    .await;
    let renewed = TestCertificate::with_cn(A_HOST, "a.example.com, renewed");
    run.write_manifest("secrets.yaml", &secrets_yaml(&renewed, &b));
    let deadline = std::time::Instant::now() + crate::support::TIMEOUT;
    loop {
        let served = run.get_tls(Some(A_HOST), A_HOST, "/").await;
        if served.tls().subject_cn.as_deref() == Some("a.example.com, renewed") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the renewal is not served: {:?}\n{}",
            served.tls(),
            run.output()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    expect_certificate(&run, A_HOST, "a.example.com, renewed").await;
    expect_certificate(&run, B_HOST, B_HOST).await;

    let status = run.status().await;
    assert_eq!(
        status["applied_generation"], applied,
        "the reload still waits: {status:#}"
    );
    assert_eq!(status["reloads"], 1, "{status:#}");
    assert_eq!(run.worker_pids().await, workers, "the worker is the same");
}
