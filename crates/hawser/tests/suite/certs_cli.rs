//! `hawser certs bootstrap|renew|check --store DIR`: the controller↔agent
//! certificates in a Secret-shaped directory; and the choice between `--store DIR` and
//! `--kubernetes` (whose store is tested against a fake API server in hawser-pki).

use crate::support;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread;

use support::{Finished, TIMEOUT, hawser_command, run_to_end};

const ISSUER: &str = "hawser-agent-issuer";
const IDENTITIES: [&str; 2] = ["hawser-agent-identity", "hawser-controller-identity"];
/// The fault-injection hook of `hawser certs`: a pause after each Secret written.
const PAUSE_AFTER_WRITE: &str = "HAWSER_CERTS_PAUSE_AFTER_WRITE_MS";
/// The pause: the run moves on to its next stage after it, so the test must kill the run
/// well within it; a kill lands a few milliseconds after the line is read.
const PAUSE_MS: &str = "2000";

fn certs(verb: &str, store: &Path, extra: &[&str]) -> Finished {
    let mut command = hawser_command(["certs", verb, "--store"]);
    command.arg(store).args(extra);
    run_to_end(&mut command)
}

#[test]
fn bootstrap_creates_both_identities_and_check_passes() {
    let store = tempfile::tempdir().expect("store");
    let run = certs("bootstrap", store.path(), &[]);
    assert!(run.status.success(), "{}", run.describe());
    assert!(
        run.stdout.contains(
            "wrote hawser-agent-issuer, hawser-agent-identity, hawser-controller-identity"
        ),
        "{}",
        run.describe()
    );
    let progress: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("wrote "))
        .collect();
    assert_eq!(
        progress,
        [
            "wrote hawser-agent-issuer (generation 1)",
            "wrote hawser-agent-identity (generation 1)",
            "wrote hawser-controller-identity (generation 1)",
        ],
        "{}",
        run.describe()
    );
    for secret in ["hawser-agent-identity", "hawser-controller-identity"] {
        for key in ["tls.crt", "tls.key", "ca.crt"] {
            assert!(
                store.path().join(secret).join(key).is_file(),
                "{secret}/{key}"
            );
        }
        let mode = std::fs::metadata(store.path().join(secret).join("tls.key"))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{secret}/tls.key must be private");
    }

    let again = certs("renew", store.path(), &[]);
    assert!(again.status.success(), "{}", again.describe());
    assert!(
        again.stdout.contains("nothing written"),
        "{}",
        again.describe()
    );

    let check = certs("check", store.path(), &[]);
    assert!(check.status.success(), "{}", check.describe());
    assert!(
        check
            .stdout
            .contains("hawser-agent-identity tls.crt: notAfter="),
        "{}",
        check.describe()
    );
}

#[test]
fn check_fails_when_certificates_are_missing_or_expire_soon() {
    let empty = tempfile::tempdir().expect("store");
    let check = certs("check", empty.path(), &[]);
    assert_eq!(check.status.code(), Some(1), "{}", check.describe());
    assert!(
        check.stderr.contains("hawser certs renew"),
        "{}",
        check.describe()
    );

    // Ten-day certificates are within the 30-day warning from the start.
    let short = tempfile::tempdir().expect("store");
    let run = certs("bootstrap", short.path(), &["--validity-days", "10"]);
    assert!(run.status.success(), "{}", run.describe());
    let check = certs("check", short.path(), &[]);
    assert_eq!(check.status.code(), Some(1), "{}", check.describe());
}

#[test]
fn validity_outside_1_to_3650_days_is_refused() {
    let store = tempfile::tempdir().expect("store");
    for days in ["0", "3651"] {
        let run = certs("bootstrap", store.path(), &["--validity-days", days]);
        assert!(!run.status.success(), "{days}: {}", run.describe());
        assert!(
            run.stderr.contains("validity-days"),
            "{days}: {}",
            run.describe()
        );
    }
    assert!(
        std::fs::read_dir(store.path())
            .expect("store")
            .next()
            .is_none(),
        "nothing written"
    );
}

#[test]
fn exactly_one_of_store_or_kubernetes_is_required() {
    let store = tempfile::tempdir().expect("store");
    let dir = store.path().to_str().expect("utf-8 path");
    for (args, expected) in [
        (vec![], "--store <STORE>|--kubernetes"),
        (vec!["--store", dir, "--kubernetes"], "cannot be used with"),
    ] {
        let run = run_to_end(hawser_command(["certs", "check"]).args(&args));
        assert_eq!(run.status.code(), Some(2), "{args:?}: {}", run.describe());
        assert!(
            run.stderr.contains(expected),
            "{args:?}: {}",
            run.describe()
        );
    }
    let run = certs("renew", store.path(), &["--namespace", "hawser-system"]);
    assert_eq!(run.status.code(), Some(64), "{}", run.describe());
    assert!(
        run.stderr.contains("--namespace applies to --kubernetes"),
        "{}",
        run.describe()
    );
}

#[test]
fn kubernetes_without_a_cluster_is_a_configuration_error() {
    let home = tempfile::tempdir().expect("home");
    for verb in ["renew", "check"] {
        let mut command = hawser_command(["certs", verb, "--kubernetes"]);
        command
            .env("HOME", home.path())
            .env("KUBECONFIG", home.path().join("absent-kubeconfig"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT");
        let run = run_to_end(&mut command);
        assert_eq!(run.status.code(), Some(64), "{verb}: {}", run.describe());
        assert!(
            run.stderr
                .contains("--kubernetes needs an in-cluster service account or a kubeconfig"),
            "{verb}: {}",
            run.describe()
        );
        assert!(!run.stdout.contains("wrote"), "{verb}: {}", run.describe());
    }
}

#[test]
fn kubernetes_namespace_comes_from_the_kubeconfig_unless_given() {
    // A kubeconfig naming a loopback port nobody listens on: the client is configured,
    // and the first request says which Secret it was for.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let home = tempfile::tempdir().expect("home");
    let kubeconfig = home.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: test\n\
             clusters: [{{name: test, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n\
             users: [{{name: test, user: {{token: not-a-secret}}}}]\n\
             contexts: [{{name: test, context: {{cluster: test, user: test, namespace: from-kubeconfig}}}}]\n"
        ),
    )
    .expect("write kubeconfig");
    for (extra, namespace) in [
        (vec![], "from-kubeconfig"),
        (vec!["--namespace", "hawser-system"], "hawser-system"),
    ] {
        let mut command = hawser_command(["certs", "renew", "--kubernetes"]);
        command
            .args(&extra)
            .env("HOME", home.path())
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT");
        let run = run_to_end(&mut command);
        assert_eq!(run.status.code(), Some(1), "{}", run.describe());
        assert!(
            run.stderr.contains(&format!(
                "failed to read secret {namespace}/hawser-agent-identity"
            )),
            "{}",
            run.describe()
        );
    }
}

/// A child killed (SIGKILL) and reaped on drop, whatever the test did.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `hawser certs renew <extra>` with a pause after each write, waits for its
/// `k`-th `wrote` line, and kills it with SIGKILL during the pause that follows. Returns
/// the `wrote` lines it printed.
fn killed_after_write(store: &Path, extra: &[&str], k: usize) -> Vec<String> {
    let mut command = hawser_command(["certs", "renew", "--store"]);
    command
        .arg(store)
        .args(extra)
        .env(PAUSE_AFTER_WRITE, PAUSE_MS)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let mut child = KillOnDrop(command.spawn().expect("start hawser certs renew"));
    let stdout = child.0.stdout.take().expect("piped stdout");
    let (lines, received) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut wrote = Vec::new();
    while wrote.len() < k {
        match received.recv_timeout(TIMEOUT) {
            Ok(line) if line.starts_with("wrote ") => wrote.push(line),
            Ok(_) => {}
            Err(e) => panic!(
                "no `wrote` line #{} ({e}); so far: {wrote:?}",
                wrote.len() + 1
            ),
        }
    }
    child.0.kill().expect("kill -9");
    let status = child.0.wait().expect("reap");
    assert_eq!(
        status.signal(),
        Some(9),
        "killed mid-run, not finished: {status}"
    );
    wrote
}

fn read_key(store: &Path, secret: &str, key: &str) -> Option<Vec<u8>> {
    std::fs::read(store.join(secret).join(key)).ok()
}

/// The stages (issuer, agent identity, controller identity) that hold `generation`.
fn stages_at(store: &Path, generation: u64) -> usize {
    let generation = generation.to_string().into_bytes();
    [ISSUER, IDENTITIES[0], IDENTITIES[1]]
        .iter()
        .filter(|secret| read_key(store, secret, "generation").as_ref() == Some(&generation))
        .count()
}

fn generation_of(line: &str) -> u64 {
    let (_, rest) = line.split_once("(generation ").expect("a generation");
    rest.trim_end_matches(')').parse().expect("a number")
}

/// The issuer holds `generation` and the CA `ca`; both identities carry that generation,
/// are signed by that CA and trust it (and, after a rotation, `previous_ca` as well);
/// `hawser certs check` passes.
fn expect_valid_generation(store: &Path, generation: u64, ca: &[u8], previous_ca: Option<&[u8]>) {
    let issuer_generation = read_key(store, ISSUER, "generation").expect("issuer generation");
    assert_eq!(issuer_generation, generation.to_string().into_bytes());
    assert_eq!(
        read_key(store, ISSUER, "ca.crt").as_deref(),
        Some(ca),
        "the issuer's ca"
    );
    for secret in IDENTITIES {
        let crt = read_key(store, secret, "tls.crt").expect("tls.crt");
        assert!(
            hawser_pki::cert::is_signed_by(&crt, ca),
            "{secret} signed by the issuer ca"
        );
        assert_eq!(
            read_key(store, secret, "ca.crt").as_deref(),
            Some(ca),
            "{secret} trust"
        );
        assert_eq!(
            read_key(store, secret, "generation"),
            Some(generation.to_string().into_bytes()),
            "{secret} generation"
        );
        if let Some(previous) = previous_ca {
            assert_eq!(
                read_key(store, secret, "previous-ca.crt").as_deref(),
                Some(previous),
                "{secret} keeps trusting the previous ca"
            );
            assert!(read_key(store, secret, "previous-ca-until").is_some());
        }
    }
    let check = certs("check", store, &[]);
    assert!(check.status.success(), "{}", check.describe());
}

#[test]
fn bootstrap_killed_between_each_stage_resumes_the_same_generation() {
    for k in 1..=3 {
        let store = tempfile::tempdir().expect("store");
        let wrote = killed_after_write(store.path(), &[], k);
        assert_eq!(generation_of(&wrote[0]), 1, "{wrote:?}");
        assert_eq!(
            stages_at(store.path(), 1),
            k,
            "killed right after write {k}"
        );
        let ca = read_key(store.path(), ISSUER, "ca.crt").expect("the issuer is written first");

        let rerun = certs("renew", store.path(), &[]);
        assert!(
            rerun.status.success(),
            "killed after write {k}: {}",
            rerun.describe()
        );
        assert!(
            !rerun.stdout.contains(&format!("wrote {ISSUER}")),
            "killed after write {k}: the rerun must not mint another ca\n{}",
            rerun.describe()
        );
        expect_valid_generation(store.path(), 1, &ca, None);
    }
}

#[test]
fn rotate_ca_killed_between_each_stage_resumes_the_same_generation() {
    for k in 1..=3 {
        let store = tempfile::tempdir().expect("store");
        let setup = certs("bootstrap", store.path(), &[]);
        assert!(setup.status.success(), "{}", setup.describe());
        let old_ca = read_key(store.path(), ISSUER, "ca.crt").expect("ca");

        let wrote = killed_after_write(store.path(), &["--rotate-ca"], k);
        assert_eq!(wrote[0], format!("wrote {ISSUER} (generation 2)"));
        assert_eq!(
            stages_at(store.path(), 2),
            k,
            "killed right after write {k}"
        );
        let new_ca = read_key(store.path(), ISSUER, "ca.crt").expect("ca");
        assert_ne!(new_ca, old_ca, "the rotation wrote a new ca first");

        // Until its last write the rotation is unfinished, and rerunning the same command
        // finishes it; after the last write it was complete, and another `--rotate-ca`
        // would rightly start a new one, so the rerun is a plain renew.
        let rerun = if k < 3 {
            certs("renew", store.path(), &["--rotate-ca"])
        } else {
            certs("renew", store.path(), &[])
        };
        assert!(
            rerun.status.success(),
            "killed after write {k}: {}",
            rerun.describe()
        );
        assert!(
            rerun.stdout.contains("generation 2")
                && !rerun.stdout.contains(&format!("wrote {ISSUER}")),
            "killed after write {k}: the rerun must finish generation 2\n{}",
            rerun.describe()
        );
        expect_valid_generation(store.path(), 2, &new_ca, Some(&old_ca));
    }
}
