#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

use std::time::SystemTime;

use super::*;
use crate::issue;
use crate::tls::fingerprint;
use crate::tls::testing::{AGENT, DAY, HOUR, Pki, TlsFiles, chain};

fn load(files: &TlsFiles, role: Role, now: SystemTime) -> Result<Material, TlsError> {
    let dir = tempfile::tempdir().unwrap();
    files.write_plain(dir.path());
    load_dir(dir.path(), role, now)
}

/// Loads `files` expecting an error; returns it and its message.
fn refused(files: &TlsFiles, role: Role, now: SystemTime) -> (TlsError, String) {
    let err = load(files, role, now).expect_err("must be refused");
    let message = err.to_string();
    (err, message)
}

#[test]
fn valid_identity_loads() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let material = load(&pki.files(Role::Agent), Role::Agent, now).unwrap();
    assert_eq!(material.role(), Role::Agent);
    assert_eq!(material.revision().len(), 64);
    assert_eq!(material.subject(), format!("CN={AGENT}"));
    let info = crate::cert::inspect(pki.agent.cert_pem.as_bytes()).unwrap();
    assert_eq!(material.not_after(), info.not_after);
    assert_eq!(
        material.ca_fingerprints(),
        vec![fingerprint(&chain(&pki.ca)[0])]
    );
    assert_eq!(material.previous_ca_until(), None);
    assert_eq!(material.certified_key().cert, chain(&pki.agent));
}

#[test]
fn debug_never_shows_key_material() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let material = load(&pki.files(Role::Agent), Role::Agent, now).unwrap();
    let shown = format!("{material:?}");
    let key_body = pki.agent.key_pem.lines().nth(1).unwrap();
    assert!(shown.contains("revision"), "{shown}");
    assert!(
        !shown.contains("PRIVATE") && !shown.contains(key_body),
        "{shown}"
    );
}

#[test]
fn revision_follows_contents_only() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let files = pki.files(Role::Agent);
    let store = tempfile::tempdir().unwrap();
    let dir = files.write_store(store.path(), "id");
    let first = load_dir(&dir, Role::Agent, now).unwrap();
    files.write_store(store.path(), "id");
    assert_eq!(
        load_dir(&dir, Role::Agent, now).unwrap().revision(),
        first.revision()
    );
    let other = Pki::under(pki.ca.clone(), now, 30).files(Role::Agent);
    other.write_store(store.path(), "id");
    assert_ne!(
        load_dir(&dir, Role::Agent, now).unwrap().revision(),
        first.revision()
    );
}

#[test]
fn secret_volume_reads_the_revision_data_points_at() {
    let now = SystemTime::now();
    let (a, b) = (Pki::new(now), Pki::new(now));
    let dir = tempfile::tempdir().unwrap();
    a.files(Role::Controller)
        .write_volume(dir.path(), "2030_01_01_a");
    let first = load_dir(dir.path(), Role::Controller, now).unwrap();
    assert_eq!(first.certified_key().cert, chain(&a.controller));

    b.files(Role::Controller)
        .write_volume(dir.path(), "2030_01_01_b");
    let second = load_dir(dir.path(), Role::Controller, now).unwrap();
    assert_eq!(second.certified_key().cert, chain(&b.controller));
    assert_eq!(
        second.ca_fingerprints(),
        vec![fingerprint(&chain(&b.ca)[0])]
    );
    assert_ne!(first.revision(), second.revision());
}

#[test]
fn each_missing_file_is_named() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    for name in [files::TLS_CRT, files::TLS_KEY, files::CA_CRT] {
        let (err, message) = refused(&pki.files(Role::Agent).without(name), Role::Agent, now);
        assert_eq!(err.metric_label(), "missing", "{message}");
        assert!(
            message.contains(name) && message.contains("is missing"),
            "{message}"
        );
    }
}

#[test]
fn a_missing_directory_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let err = load_dir(&dir.path().join("absent"), Role::Agent, SystemTime::now()).unwrap_err();
    assert_eq!(err.metric_label(), "unreadable");
    assert!(err.to_string().contains("absent"), "{err}");
}

#[test]
fn malformed_certificates_and_keys_are_named() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    for (name, label) in [
        (files::TLS_CRT, "certificate"),
        (files::CA_CRT, "certificate"),
        (files::TLS_KEY, "key"),
    ] {
        let files = pki.files(Role::Agent).with(name, "not pem at all");
        let (err, message) = refused(&files, Role::Agent, now);
        assert_eq!(err.metric_label(), label, "{message}");
        assert!(message.contains(name), "{message}");
    }
    let garbled = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    let (err, message) = refused(
        &pki.files(Role::Agent).with(files::TLS_CRT, garbled),
        Role::Agent,
        now,
    );
    assert_eq!(err.metric_label(), "certificate", "{message}");
}

#[test]
fn a_key_from_another_certificate_is_refused() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let files = pki
        .files(Role::Agent)
        .with(files::TLS_KEY, &pki.controller.key_pem);
    let (err, message) = refused(&files, Role::Agent, now);
    assert_eq!(err.metric_label(), "key_mismatch", "{message}");
    assert!(message.contains("tls.key does not match"), "{message}");
}

#[test]
fn an_expired_identity_is_refused_with_its_not_after() {
    let now = SystemTime::now();
    let then = now - 10 * DAY;
    let ca = issue::new_ca(then, 365, 1).unwrap();
    let pki = Pki::under(ca, then, 1);
    let (err, message) = refused(&pki.files(Role::Agent), Role::Agent, now);
    assert_eq!(err.metric_label(), "expired", "{message}");
    let not_after = rfc3339(
        crate::cert::inspect(pki.agent.cert_pem.as_bytes())
            .unwrap()
            .not_after,
    );
    assert!(
        message.contains(&format!("expired at {not_after}")),
        "{message}"
    );
}

#[test]
fn an_identity_not_yet_valid_is_refused() {
    let now = SystemTime::now();
    // Beyond the two days a fresh certificate is backdated by.
    let pki = Pki::new(now + 3 * DAY);
    let (err, message) = refused(&pki.files(Role::Agent), Role::Agent, now);
    assert_eq!(err.metric_label(), "not_yet_valid", "{message}");
}

#[test]
fn the_other_roles_identity_is_refused() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let (err, message) = refused(&pki.files(Role::Controller), Role::Agent, now);
    assert_eq!(err.metric_label(), "wrong_role", "{message}");
    assert!(message.contains("serverAuth"), "{message}");
    let (_, message) = refused(&pki.files(Role::Agent), Role::Controller, now);
    assert!(message.contains("clientAuth"), "{message}");
}

#[test]
fn an_identity_from_another_ca_is_refused() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let stranger = issue::new_ca(now, 365, 1).unwrap();
    let files = pki
        .files(Role::Agent)
        .with(files::CA_CRT, &stranger.cert_pem);
    let (err, message) = refused(&files, Role::Agent, now);
    assert_eq!(err.metric_label(), "untrusted", "{message}");
    assert!(message.contains("is not signed by"), "{message}");
}

#[test]
fn previous_ca_files_must_come_together() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let both = pki.files(Role::Agent).with_previous(&pki.ca, now + HOUR);
    for name in [files::PREVIOUS_CA_CRT, files::PREVIOUS_CA_UNTIL] {
        let (err, message) = refused(&both.clone().without(name), Role::Agent, now);
        assert_eq!(err.metric_label(), "previous_incomplete", "{message}");
        assert!(message.contains("must come together"), "{message}");
        let absent = message.split("exists without").nth(1).unwrap();
        assert!(absent.contains(name), "{message}");
    }
}

#[test]
fn previous_ca_until_must_be_rfc3339_within_24_hours() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let old = issue::new_ca(now, 365, 0).unwrap();
    let files = pki
        .files(Role::Agent)
        .with_previous(&old, now + HOUR)
        .with(files::PREVIOUS_CA_UNTIL, "tomorrow");
    let (err, message) = refused(&files, Role::Agent, now);
    assert_eq!(err.metric_label(), "previous_until_invalid", "{message}");
    assert!(message.contains("previous-ca-until") && message.contains("tomorrow"));

    let far = pki.files(Role::Agent).with_previous(&old, now + 25 * HOUR);
    let (err, message) = refused(&far, Role::Agent, now);
    assert_eq!(err.metric_label(), "previous_until_too_far", "{message}");
    assert!(message.contains("24 h"), "{message}");
}

#[test]
fn previous_ca_is_trusted_until_its_deadline() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let old = issue::new_ca(now, 365, 0).unwrap();
    let until = now + HOUR;
    let material = load(
        &pki.files(Role::Agent).with_previous(&old, until),
        Role::Agent,
        now,
    )
    .unwrap();
    let trust = material.trust();
    assert_eq!(
        material.previous_ca_until(),
        Some(SystemTime::from(
            time::OffsetDateTime::parse(&rfc3339(until), &Rfc3339).unwrap(),
        ))
    );
    assert_eq!(
        trust.previous_ca_fingerprints(),
        vec![fingerprint(&chain(&old)[0])]
    );
    assert_eq!(trust.roots_at(now).roots.len(), 2);
    assert!(trust.previous_active(now));
    assert_eq!(trust.roots_at(now + 2 * HOUR).roots.len(), 1);
    assert!(!trust.previous_active(now + 2 * HOUR));
}

#[test]
fn an_identity_signed_by_the_previous_ca_loads_only_before_the_deadline() {
    let now = SystemTime::now();
    let old = Pki::new(now);
    let new_ca = issue::new_ca(now, 365, 2).unwrap();
    let files = TlsFiles::new(&new_ca, &old.agent).with_previous(&old.ca, now + HOUR);
    assert!(load(&files, Role::Agent, now).is_ok());
    let (err, _) = refused(&files, Role::Agent, now + 2 * HOUR);
    assert_eq!(err.metric_label(), "untrusted");
}

#[test]
fn a_previous_ca_past_its_deadline_is_ignored() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let files = pki
        .files(Role::Agent)
        .with_previous(&pki.ca, now - HOUR)
        .with(files::PREVIOUS_CA_CRT, "garbage, but no longer read");
    let material = load(&files, Role::Agent, now).unwrap();
    assert_eq!(material.trust().roots_at(now).roots.len(), 1);
    assert!(!material.trust().previous_active(now));
}
