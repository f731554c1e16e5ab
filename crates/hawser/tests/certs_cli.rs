//! `hawser certs bootstrap|renew|check --store DIR`: the controller↔agent
//! certificates in a Secret-shaped directory.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use support::{Finished, hawser_command, run_to_end};

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
