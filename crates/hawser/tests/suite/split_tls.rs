//! Split mode's mutual TLS: a CA rotation under continuous pushes fails no
//! call; bad material of every kind is refused with a clear error while
//! HAProxy keeps serving; the previous CA stops being trusted at its
//! deadline, on open connections too.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use hawser_pki::{Role, issue};
use support::{AgentProc, Backends, ControllerProc, Manifests, Pki, Vars, copy_dir, pod};

const HOST: &str = "split.example.com";

fn manifests() -> (Backends, Manifests) {
    let backends = Backends::start(&[pod("split", "web", "web-a"), pod("split", "web", "web-b")]);
    let mut vars = Vars::new();
    vars.extend(backends.vars());
    let manifests = Manifests::from_fixture("split_mode", &vars);
    (backends, manifests)
}

fn rfc3339(at: SystemTime) -> String {
    let at = time::OffsetDateTime::from(at)
        .replace_nanosecond(0)
        .unwrap();
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ca_rotation_under_continuous_pushes_fails_no_control_request() {
    let (_backends, manifests) = manifests();
    let pki = Pki::bootstrap();
    let agents = [
        AgentProc::start(&pki.agent_dir()),
        AgentProc::start(&pki.agent_dir()),
    ];
    let controller = ControllerProc::start(
        manifests.path(),
        &[&agents[0], &agents[1]],
        &pki.controller_dir(),
        &[],
    );
    let before = controller.wait_converged().await;
    let old_ca = before["tls"]["ca_fingerprints"].clone();

    // A render every 200 ms, until told to stop.
    let original = controller.read_manifest("web.yaml");
    let pushing = Arc::new(AtomicBool::new(true));
    let writer = {
        let pushing = Arc::clone(&pushing);
        let dir = manifests.path().to_path_buf();
        tokio::spawn(async move {
            let mut round = 0;
            while pushing.load(Ordering::Relaxed) {
                round += 1;
                let text = original.replace("- path: /app", &format!("- path: /r{round}"));
                std::fs::write(dir.join(".web.tmp"), text).unwrap();
                std::fs::rename(dir.join(".web.tmp"), dir.join("web.yaml")).unwrap();
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            round
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let store = pki.store().to_path_buf();
    let renewed = tokio::task::spawn_blocking(move || {
        let mut command = support::hawser_command(["certs", "renew", "--rotate-ca"]);
        command.arg("--store").arg(store);
        support::run_to_end(&mut command)
    })
    .await
    .unwrap();
    assert!(renewed.status.success(), "{}", renewed.describe());
    // Long enough for both sides to pick up the new identities and connect anew.
    controller
        .wait_for_status("the controller on its new identity", |s| {
            s["tls"]["ca_fingerprints"] != old_ca
                && s["fleet"]["agents"]
                    .as_object()
                    .unwrap()
                    .values()
                    .all(|a| a["reconnects"].as_u64() >= Some(1))
        })
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    pushing.store(false, Ordering::Relaxed);
    let rounds = writer.await.unwrap();
    let last_path = format!("/r{rounds}/x");

    let status = controller.wait_converged().await;
    for agent in &agents {
        let entry = ControllerProc::agent(&status, agent);
        assert_eq!(
            entry["failed_pushes"], 0,
            "a push failed during the rotation: {status:#}"
        );
        assert!(entry["pushes"].as_u64() >= Some(3), "{status:#}");
        agent.expect_status_eventually(HOST, &last_path, 200).await;
        let state = agent.state();
        assert_ne!(state["tls"]["ca_fingerprints"], old_ca, "{state:#}");
        assert!(!state["tls"]["previous_ca_until"].is_null(), "{state:#}");
        assert!(
            !agent.output().contains("control call refused"),
            "{}",
            agent.output()
        );
    }
}

/// Copies the agent's identity with `previous_ca` trusted until `until`.
fn with_previous_ca(dir: &std::path::Path, previous_ca: &[u8], until: SystemTime) {
    std::fs::write(dir.join("previous-ca.crt"), previous_ca).unwrap();
    std::fs::write(dir.join("previous-ca-until"), rfc3339(until)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_material_is_refused_clearly_and_haproxy_keeps_serving() {
    let (_backends, manifests) = manifests();
    let pki = Pki::bootstrap();
    let agent_dir = copy_dir(&pki.agent_dir(), &pki.store().join("agent-tls"));
    let agent = AgentProc::start(&agent_dir);
    {
        let good = ControllerProc::start(manifests.path(), &[&agent], &pki.controller_dir(), &[]);
        good.wait_converged().await;
    }
    agent.expect_status_eventually(HOST, "/app/x", 200).await;
    let served = agent.state()["appliedGeneration"].clone();

    let stranger = Pki::bootstrap();
    let now = SystemTime::now();
    let issuer_ca = issue::CertifiedKey {
        cert_pem: String::from_utf8(pki.read("hawser-agent-issuer", "ca.crt")).unwrap(),
        key_pem: String::from_utf8(pki.read("hawser-agent-issuer", "ca.key")).unwrap(),
    };
    let expired = issue::new_identity(
        &issuer_ca,
        Role::Controller,
        "hawser-controller",
        now - Duration::from_secs(10 * 86_400),
        1,
    )
    .unwrap();

    // (name, tls directory, what /status must say, and where)
    let unknown_ca = copy_dir(&stranger.controller_dir(), &pki.store().join("unknown-ca"));
    std::fs::write(
        unknown_ca.join("ca.crt"),
        pki.read("hawser-controller-identity", "ca.crt"),
    )
    .unwrap();
    std::fs::write(
        unknown_ca.join("previous-ca.crt"),
        stranger.read("hawser-controller-identity", "ca.crt"),
    )
    .unwrap();
    std::fs::write(
        unknown_ca.join("previous-ca-until"),
        rfc3339(now + Duration::from_secs(3600)),
    )
    .unwrap();
    let expired_dir = pki.copy_controller_dir("expired");
    std::fs::write(expired_dir.join("tls.crt"), &expired.cert_pem).unwrap();
    std::fs::write(expired_dir.join("tls.key"), &expired.key_pem).unwrap();
    let far = pki.copy_controller_dir("far-deadline");
    with_previous_ca(
        &far,
        &stranger.read("hawser-controller-identity", "ca.crt"),
        now + Duration::from_secs(48 * 3600),
    );
    let malformed = pki.copy_controller_dir("malformed");
    std::fs::write(
        malformed.join("tls.crt"),
        "-----BEGIN CERTIFICATE-----\nnot base64\n",
    )
    .unwrap();
    let wrong_role = copy_dir(&pki.agent_dir(), &pki.store().join("wrong-role"));

    let cases: [(&str, &std::path::Path, &str); 5] = [
        (
            "an identity from an unknown CA",
            &unknown_ca,
            "refused the connection",
        ),
        ("an expired identity", &expired_dir, "expired at"),
        (
            "a previous-ca-until more than 24 h ahead",
            &far,
            "more than 24 h from now",
        ),
        (
            "a malformed tls.crt",
            &malformed,
            "is not a valid PEM certificate",
        ),
        (
            "the agent's identity used as the controller's",
            &wrong_role,
            "lacks the clientAuth extended key usage",
        ),
    ];
    for (what, dir, message) in cases {
        let controller = ControllerProc::start(manifests.path(), &[&agent], dir, &[]);
        let status = controller
            .wait_for_status(&format!("{what} refused"), |s| {
                let tls = s["tls"]["last_error"].as_str().unwrap_or("");
                let push = ControllerProc::agent(s, &agent)["last_error"]
                    .as_str()
                    .unwrap_or("");
                tls.contains(message) || push.contains(message)
            })
            .await;
        assert_eq!(
            ControllerProc::agent(&status, &agent)["pushes"],
            0,
            "{what}: {status:#}"
        );
        agent.expect_alive();
        agent.expect_status_eventually(HOST, "/app/x", 200).await;
        assert_eq!(agent.state()["appliedGeneration"], served, "{what}");
    }
    // The agent's identity presented to the agent as a client: refused by
    // the agent itself, for its role.
    let refused = present_as_client(
        &agent,
        &pki.read("hawser-agent-identity", "tls.crt"),
        &pki.read("hawser-agent-identity", "tls.key"),
        &pki.read("hawser-agent-identity", "ca.crt"),
    )
    .await;
    assert!(
        refused.is_err(),
        "the handshake with an agent certificate as client succeeded"
    );
    // The agent names what it refused, in its own log.
    agent
        .expect_logged("lacks the clientAuth extended key usage")
        .await;
    agent
        .expect_logged("is not signed by a ca trusted now")
        .await;

    // The agent's own directory turning malformed: it keeps its last valid
    // material, reports why, and still serves its controller.
    std::fs::write(agent_dir.join("tls.key"), "garbage").unwrap();
    let deadline = std::time::Instant::now() + support::TIMEOUT;
    loop {
        let state = agent.state();
        if state["tls"]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("tls.key"))
        {
            assert!(!state["tls"]["revision"].is_null(), "{state:#}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never reported: {state:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let controller = ControllerProc::start(manifests.path(), &[&agent], &pki.controller_dir(), &[]);
    controller.write_manifest(
        "web.yaml",
        &controller
            .read_manifest("web.yaml")
            .replace("- path: /app", "- path: /still"),
    );
    controller.wait_converged().await;
    agent.expect_status_eventually(HOST, "/still/x", 200).await;
    agent.expect_alive();
}

/// A bare TLS 1.3 client presenting `cert`/`key`, then one read: `Err`
/// when the agent refuses the certificate.
async fn present_as_client(
    agent: &AgentProc,
    cert: &[u8],
    key: &[u8],
    ca: &[u8],
) -> std::io::Result<()> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::AsyncReadExt as _;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca) {
        roots.add(c.unwrap()).unwrap();
    }
    let chain = CertificateDer::pem_slice_iter(cert)
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(key).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(chain, key)
    .unwrap();
    let tcp = tokio::net::TcpStream::connect(agent.listen).await?;
    let name = ServerName::try_from("hawser-agent").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await?;
    // TLS 1.3: the server judges the client's certificate after the client
    // finished; its verdict arrives as an alert on the first read.
    let mut byte = [0u8; 1];
    match tls.read(&mut byte).await {
        Ok(0) => Err(std::io::Error::other("closed")),
        Ok(_) => Ok(()),
        Err(e) => Err(e),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_previous_ca_until_an_old_identity_is_refused_on_its_open_connection() {
    let (_backends, manifests) = manifests();
    let old = Pki::bootstrap();
    let new = Pki::bootstrap();
    let old_ca = old.read("hawser-controller-identity", "ca.crt");
    let until = SystemTime::now() + Duration::from_secs(8);
    // The agent: renewed identity, trusting the old CA for a few seconds more.
    let agent_dir = copy_dir(&new.agent_dir(), &new.store().join("agent-tls"));
    with_previous_ca(&agent_dir, &old_ca, until);
    let agent = AgentProc::start(&agent_dir);
    // The controller: still on its old identity, already trusting the new CA.
    let controller_dir = copy_dir(&old.controller_dir(), &new.store().join("controller-tls"));
    std::fs::write(
        controller_dir.join("ca.crt"),
        new.read("hawser-controller-identity", "ca.crt"),
    )
    .unwrap();
    with_previous_ca(&controller_dir, &old_ca, until);
    let controller = ControllerProc::start(manifests.path(), &[&agent], &controller_dir, &[]);
    let converged = controller.wait_converged().await;
    assert_eq!(ControllerProc::agent(&converged, &agent)["reconnects"], 0);
    agent.expect_status_eventually(HOST, "/app/x", 200).await;

    while SystemTime::now() < until + Duration::from_millis(500) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    controller.write_manifest(
        "web.yaml",
        &controller
            .read_manifest("web.yaml")
            .replace("- path: /app", "- path: /late"),
    );
    let status = controller
        .wait_for_status("the push refused on the open connection", |s| {
            ControllerProc::agent(s, &agent)["failed_pushes"].as_u64() >= Some(1)
        })
        .await;
    let error = ControllerProc::agent(&status, &agent)["last_error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        error.contains("signed by the previous ca, trusted only until"),
        "{status:#}"
    );
    assert_eq!(
        ControllerProc::agent(&status, &agent)["reconnects"],
        0,
        "the same connection: {status:#}"
    );
    agent.expect_status_eventually(HOST, "/app/x", 200).await;
    agent.expect_alive();
    // And a new connection is refused too.
    controller
        .wait_for_status("reconnecting refused", |s| {
            ControllerProc::agent(s, &agent)["connected"] == false
        })
        .await;
    assert_eq!(agent.state()["appliedGeneration"], 1);
}
