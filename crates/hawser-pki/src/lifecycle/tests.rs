use std::cell::Cell;
use std::fs;
use std::time::UNIX_EPOCH;

use tempfile::TempDir;

use super::*;
use crate::store::DirStore;

/// A fixed "now" so every run is reproducible.
fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn days(n: u64) -> Duration {
    DAY * u32::try_from(n).unwrap()
}

fn settings(validity_days: u32) -> Settings {
    Settings {
        validity_days,
        ..Settings::default()
    }
}

fn store() -> (TempDir, DirStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    (dir, store)
}

fn read(store: &dyn SecretStore, name: &str) -> SecretData {
    store.read(name).unwrap().unwrap()
}

fn snapshot(store: &dyn SecretStore, s: &Settings) -> Vec<Option<SecretData>> {
    [&s.issuer, &s.agent, &s.controller]
        .iter()
        .map(|n| store.read(n).unwrap())
        .collect()
}

/// A store that fails its `fail_at`-th write (1-based), as if the run were killed there.
struct FailingStore<'a> {
    inner: &'a DirStore,
    fail_at: usize,
    writes: Cell<usize>,
}

impl SecretStore for FailingStore<'_> {
    fn read(&self, name: &str) -> Result<Option<SecretData>, StoreError> {
        self.inner.read(name)
    }

    fn write(&self, name: &str, data: &SecretData) -> Result<(), StoreError> {
        self.writes.set(self.writes.get() + 1);
        if self.writes.get() == self.fail_at {
            return Err(StoreError::Write {
                name: name.to_owned(),
                source: std::io::Error::other("killed"),
            });
        }
        self.inner.write(name, data)
    }
}

/// Issuer and both identities are consistent, and every identity chains to the issuer CA.
fn expect_valid(store: &dyn SecretStore, s: &Settings, now: SystemTime) -> u64 {
    let issuer = read(store, &s.issuer);
    let ca = issuer.get(keys::CA_CRT).unwrap();
    let generation = parse_generation(issuer.get(keys::GENERATION)).unwrap();
    let ca_info = cert::inspect(ca).unwrap();
    for (secret, name) in [
        (&s.agent, &s.agent_name),
        (&s.controller, &s.controller_name),
    ] {
        let id = read(store, secret);
        let crt = id.get(keys::TLS_CRT).unwrap();
        let info = cert::inspect(crt).unwrap();
        assert_eq!(info.issuer, ca_info.subject, "{secret} issuer");
        assert_eq!(info.subject, format!("CN={name}"));
        assert!(cert::is_signed_by(crt, ca), "{secret} signature");
        assert_eq!(id.get(keys::CA_CRT), Some(ca), "{secret} trust");
        assert_eq!(parse_generation(id.get(keys::GENERATION)), Some(generation));
        let key = KeyPair::from_pem(std::str::from_utf8(id.get(keys::TLS_KEY).unwrap()).unwrap());
        assert_eq!(
            key.unwrap().subject_public_key_info(),
            cert::public_key_der(crt).unwrap()
        );
    }
    let report = check(store, s, now).unwrap();
    assert!(!report.needs_attention(), "{report}");
    generation
}

#[test]
fn bootstrap_creates_ca_and_both_identities() {
    let (_dir, store) = store();
    let s = settings(365);
    let out = renew(&store, &s, t0()).unwrap();
    assert_eq!(out.generation, 1);
    assert_eq!(
        out.written,
        vec![s.issuer.clone(), s.agent.clone(), s.controller.clone()]
    );
    assert_eq!(expect_valid(&store, &s, t0()), 1);
    let issuer = read(&store, &s.issuer);
    assert!(issuer.get(keys::CA_KEY).is_some());
    assert!(read(&store, &s.agent).get(keys::PREVIOUS_CA_CRT).is_none());
}

#[test]
fn rerun_changes_nothing() {
    let (_dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    let before = snapshot(&store, &s);
    let out = renew(&store, &s, t0() + days(300)).unwrap();
    assert_eq!(out.written, Vec::<String>::new());
    assert_eq!(snapshot(&store, &s), before);
}

#[test]
fn renews_and_rotates_when_30_days_remain() {
    let (_dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    let old = snapshot(&store, &s);
    let old_ca = read(&store, &s.issuer).get(keys::CA_CRT).unwrap().to_vec();

    assert!(
        renew(&store, &s, t0() + days(334))
            .unwrap()
            .written
            .is_empty()
    );
    let now = t0() + days(335);
    let out = renew(&store, &s, now).unwrap();
    assert_eq!((out.generation, out.written.len()), (2, 3));
    assert_eq!(expect_valid(&store, &s, now), 2);

    let issuer = read(&store, &s.issuer);
    let old_issuer = old[0].as_ref().unwrap();
    assert_ne!(issuer.get(keys::CA_KEY), old_issuer.get(keys::CA_KEY));
    for (secret, before) in [(&s.agent, &old[1]), (&s.controller, &old[2])] {
        let id = read(&store, secret);
        assert_ne!(
            id.get(keys::TLS_KEY),
            before.as_ref().unwrap().get(keys::TLS_KEY)
        );
        assert_eq!(id.get(keys::PREVIOUS_CA_CRT), Some(old_ca.as_slice()));
        let until = std::str::from_utf8(id.get(keys::PREVIOUS_CA_UNTIL).unwrap()).unwrap();
        let until = SystemTime::from(OffsetDateTime::parse(until, &Rfc3339).unwrap());
        assert_eq!(until, now + TRUST_OVERLAP);
        assert!(until <= now + days(1));
    }
}

#[test]
fn short_validity_renews_at_one_third_of_lifetime() {
    let (_dir, store) = store();
    let s = settings(30);
    renew(&store, &s, t0()).unwrap();
    // 29 days left is inside a 30-day window, but not inside a third of 30 days.
    assert!(
        renew(&store, &s, t0() + days(1))
            .unwrap()
            .written
            .is_empty()
    );
    assert!(
        renew(&store, &s, t0() + days(19))
            .unwrap()
            .written
            .is_empty()
    );
    let out = renew(&store, &s, t0() + days(20) + Duration::from_secs(60)).unwrap();
    assert_eq!((out.generation, out.written.len()), (2, 3));
}

/// Hourly runs on a clock that steps a day forward, then a day back: nothing is reissued
/// and no CA is minted, whatever the validity (a one-day certificate too, whose lifetime
/// counts from issuance, not from its backdated notBefore); the identities made at `t0`
/// still chain and are valid on the clock a day behind.
#[test]
fn a_clock_stepping_a_day_either_way_renews_nothing() {
    let hour = Duration::from_secs(3600);
    for validity in [1, 3, 365] {
        let (_dir, store) = store();
        let s = settings(validity);
        renew(&store, &s, t0()).unwrap();
        let before = snapshot(&store, &s);
        let mut steps = vec![t0() + hour, t0() - days(1), t0() - days(1) + hour];
        if validity > 1 {
            // A one-day certificate is rightly due a day later.
            steps.extend([t0() + days(1), t0() + days(1) + hour]);
        }
        for now in steps {
            let out = renew(&store, &s, now).unwrap();
            assert_eq!(out.written, Vec::<String>::new(), "validity {validity}");
        }
        assert_eq!(snapshot(&store, &s), before, "validity {validity}");
        for secret in [&s.agent, &s.controller] {
            let crt = read(&store, secret).get(keys::TLS_CRT).unwrap().to_vec();
            let info = cert::inspect(&crt).unwrap();
            assert!(info.not_before <= t0() - days(1), "{secret}: {info:?}");
        }
    }
}

fn killed_then_rerun(s: &Settings, setup: SystemTime, now: SystemTime, fail_at: usize) {
    let (_dir, store) = store();
    if setup != now {
        renew(&store, s, setup).unwrap();
    }
    let failing = FailingStore {
        inner: &store,
        fail_at,
        writes: Cell::new(0),
    };
    let err = renew(&failing, s, now).unwrap_err();
    assert_eq!(err.metric_label(), "write");
    let written_ca = store
        .read(&s.issuer)
        .unwrap()
        .map(|d| d.get(keys::CA_CRT).unwrap().to_vec());

    let later = now + Duration::from_secs(600);
    let out = renew(&store, s, later).unwrap();
    let expected_generation = if setup == now { 1 } else { 2 };
    assert_eq!(
        out.generation, expected_generation,
        "killed at write {fail_at}"
    );
    if fail_at > 1 {
        // The issuer was already written: the rerun finishes that CA instead of making another.
        assert!(
            !out.written.contains(&s.issuer),
            "killed at write {fail_at}"
        );
        let ca = read(&store, &s.issuer).get(keys::CA_CRT).unwrap().to_vec();
        assert_eq!(Some(ca), written_ca);
    }
    assert_eq!(expect_valid(&store, s, later), expected_generation);
    assert!(renew(&store, s, later).unwrap().written.is_empty());
}

#[test]
fn killed_bootstrap_resumes() {
    for fail_at in 1..=3 {
        killed_then_rerun(&settings(365), t0(), t0(), fail_at);
    }
}

#[test]
fn killed_rotation_resumes_the_same_generation() {
    let s = settings(365);
    for fail_at in 1..=3 {
        killed_then_rerun(&s, t0(), t0() + days(340), fail_at);
    }
}

#[test]
fn resumed_rotation_still_grants_previous_trust() {
    let (_dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    let old_ca = read(&store, &s.issuer).get(keys::CA_CRT).unwrap().to_vec();
    let failing = FailingStore {
        inner: &store,
        fail_at: 3,
        writes: Cell::new(0),
    };
    renew(&failing, &s, t0() + days(340)).unwrap_err();
    renew(&store, &s, t0() + days(340)).unwrap();
    for secret in [&s.agent, &s.controller] {
        assert_eq!(
            read(&store, secret).get(keys::PREVIOUS_CA_CRT),
            Some(old_ca.as_slice())
        );
    }
}

#[test]
fn missing_identity_is_recreated() {
    let (dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    let controller = read(&store, &s.controller);
    fs::remove_file(dir.path().join(&s.agent)).unwrap();
    let out = renew(&store, &s, t0()).unwrap();
    assert_eq!(out.written, vec![s.agent.clone()]);
    assert_eq!(read(&store, &s.controller), controller);
    expect_valid(&store, &s, t0());
}

#[test]
fn patched_identity_is_restored_under_the_issuer() {
    let (_dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    let mut agent = read(&store, &s.agent);
    let stranger = issue::new_ca(t0(), 365, 1).unwrap();
    agent.insert(keys::CA_CRT, stranger.cert_pem);
    store.write(&s.agent, &agent).unwrap();
    assert_eq!(
        renew(&store, &s, t0()).unwrap().written,
        vec![s.agent.clone()]
    );
    expect_valid(&store, &s, t0());
}

#[test]
fn corrupt_issuer_is_an_error_asking_for_the_backup() {
    let (_dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    let mut issuer = read(&store, &s.issuer);
    issuer.insert(keys::CA_KEY, "garbage");
    store.write(&s.issuer, &issuer).unwrap();
    let before = snapshot(&store, &s);
    let err = renew(&store, &s, t0()).unwrap_err();
    assert_eq!(err.metric_label(), "issuer_corrupt");
    assert!(
        err.to_string()
            .contains("restore the issuer secret from backup"),
        "{err}"
    );
    assert_eq!(snapshot(&store, &s), before);

    let other = issue::new_ca(t0(), 365, 1).unwrap();
    issuer.insert(keys::CA_KEY, other.key_pem);
    store.write(&s.issuer, &issuer).unwrap();
    let err = renew(&store, &s, t0()).unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
}

#[test]
fn missing_issuer_with_identities_is_an_error() {
    let (dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    fs::remove_file(dir.path().join(&s.issuer)).unwrap();
    let err = renew(&store, &s, t0()).unwrap_err();
    assert_eq!(err.metric_label(), "issuer_missing");
    assert!(err.to_string().contains("backup"), "{err}");
    assert!(store.read(&s.issuer).unwrap().is_none());
}

#[test]
fn identity_newer_than_issuer_is_refused() {
    let (_dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    let mut agent = read(&store, &s.agent);
    agent.insert(keys::GENERATION, "7");
    store.write(&s.agent, &agent).unwrap();
    let before = snapshot(&store, &s);
    for now in [t0(), t0() + days(340)] {
        let err = renew(&store, &s, now).unwrap_err();
        assert_eq!(err.metric_label(), "issuer_behind");
        assert_eq!(snapshot(&store, &s), before);
    }
}

#[test]
fn private_keys_are_0600() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    for (secret, key) in [
        (&s.issuer, "ca.key"),
        (&s.agent, "tls.key"),
        (&s.controller, "tls.key"),
    ] {
        let mode = fs::metadata(dir.path().join(secret).join(key))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{secret}/{key}");
    }
}

#[test]
fn invalid_validity_is_rejected() {
    let (_dir, store) = store();
    let err = renew(&store, &settings(3651), t0()).unwrap_err();
    assert_eq!(err.metric_label(), "validity");
    assert!(store.read("hawser-agent-issuer").unwrap().is_none());
}

#[test]
fn check_reports_expiry_and_unreadable_certificates() {
    let (_dir, store) = store();
    let s = settings(365);
    let empty = check(&store, &s, t0()).unwrap();
    assert!(empty.needs_attention());
    assert_eq!(empty.certificates[0].problem.as_deref(), Some("missing"));

    renew(&store, &s, t0()).unwrap();
    let report = check(&store, &s, t0()).unwrap();
    assert_eq!(report.certificates.len(), 4);
    assert!(report.certificates.iter().all(|c| c.not_after.is_some()));
    assert!(
        report
            .to_string()
            .contains("hawser-agent-identity tls.crt: notAfter=")
    );

    let late = check(&store, &s, t0() + days(336)).unwrap();
    assert!(late.needs_attention());
    assert!(late.to_string().contains("expires within 30 days"));

    let mut agent = read(&store, &s.agent);
    agent.insert(keys::TLS_CRT, "not a certificate");
    store.write(&s.agent, &agent).unwrap();
    let broken = check(&store, &s, t0()).unwrap();
    assert!(
        broken.certificates[0]
            .problem
            .as_deref()
            .unwrap()
            .starts_with("unreadable")
    );
}

fn force_rotation(store: &dyn SecretStore, s: &Settings, now: SystemTime) -> RenewResult {
    let mut reported = Vec::new();
    let request = RenewRequest { rotate_ca: true };
    let outcome = renew_with(store, s, now, request, &mut |w| reported.push(w.clone()));
    RenewResult { outcome, reported }
}

struct RenewResult {
    outcome: Result<RenewOutcome, RenewError>,
    reported: Vec<Written>,
}

#[test]
fn each_write_is_reported_as_it_happens() {
    let (_dir, store) = store();
    let s = settings(365);
    let mut reported = Vec::new();
    let out = renew_with(&store, &s, t0(), RenewRequest::default(), &mut |w| {
        // Reported only once stored.
        assert!(store.read(&w.secret).unwrap().is_some());
        reported.push(w.clone());
    })
    .unwrap();
    let names: Vec<_> = reported.iter().map(|w| w.secret.clone()).collect();
    assert_eq!(names, out.written);
    assert!(reported.iter().all(|w| w.generation == 1));
}

#[test]
fn forced_rotation_replaces_a_ca_that_is_not_due() {
    let (_dir, store) = store();
    let s = settings(365);
    renew(&store, &s, t0()).unwrap();
    let old_ca = read(&store, &s.issuer).get(keys::CA_CRT).unwrap().to_vec();

    let now = t0() + days(1);
    let run = force_rotation(&store, &s, now);
    let out = run.outcome.unwrap();
    assert_eq!(out.generation, 2);
    assert_eq!(
        out.written,
        vec![s.issuer.clone(), s.agent.clone(), s.controller.clone()]
    );
    assert!(run.reported.iter().all(|w| w.generation == 2));
    assert_eq!(expect_valid(&store, &s, now), 2);

    // The order of a rotation: each identity moves to the new CA at once and keeps
    // trusting the old one for an hour.
    let new_ca = read(&store, &s.issuer).get(keys::CA_CRT).unwrap().to_vec();
    assert_ne!(new_ca, old_ca);
    for secret in [&s.agent, &s.controller] {
        let id = read(&store, secret);
        assert!(cert::is_signed_by(id.get(keys::TLS_CRT).unwrap(), &new_ca));
        assert_eq!(id.get(keys::CA_CRT), Some(new_ca.as_slice()));
        assert_eq!(id.get(keys::PREVIOUS_CA_CRT), Some(old_ca.as_slice()));
        assert_eq!(
            id.get(keys::PREVIOUS_CA_UNTIL),
            Some(rfc3339(now + TRUST_OVERLAP).as_bytes())
        );
    }
}

#[test]
fn rerunning_an_interrupted_forced_rotation_finishes_it() {
    let s = settings(365);
    for fail_at in 2..=3 {
        let (_dir, store) = store();
        renew(&store, &s, t0()).unwrap();
        let old_ca = read(&store, &s.issuer).get(keys::CA_CRT).unwrap().to_vec();
        let failing = FailingStore {
            inner: &store,
            fail_at,
            writes: Cell::new(0),
        };
        let now = t0() + days(1);
        force_rotation(&failing, &s, now).outcome.unwrap_err();
        let started_ca = read(&store, &s.issuer).get(keys::CA_CRT).unwrap().to_vec();

        let out = force_rotation(&store, &s, now).outcome.unwrap();
        assert_eq!(out.generation, 2, "killed at write {fail_at}");
        assert!(
            !out.written.contains(&s.issuer),
            "killed at write {fail_at}"
        );
        assert_eq!(
            read(&store, &s.issuer).get(keys::CA_CRT),
            Some(started_ca.as_slice())
        );
        expect_valid(&store, &s, now);
        for secret in [&s.agent, &s.controller] {
            let id = read(&store, secret);
            assert_eq!(id.get(keys::PREVIOUS_CA_CRT), Some(old_ca.as_slice()));
        }

        // Settled again: the next forced rotation is a new one.
        assert_eq!(
            force_rotation(&store, &s, now).outcome.unwrap().generation,
            3
        );
    }
}

#[test]
fn forced_rotation_on_an_empty_store_bootstraps() {
    let (_dir, store) = store();
    let s = settings(365);
    let out = force_rotation(&store, &s, t0()).outcome.unwrap();
    assert_eq!(out.generation, 1);
    assert_eq!(expect_valid(&store, &s, t0()), 1);
}
