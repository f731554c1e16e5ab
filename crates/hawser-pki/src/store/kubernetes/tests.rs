//! The whole lifecycle (`renew`, `check`) on [`KubeSecretStore`] against a fake API server.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::Method;

use super::*;
use crate::cert;
use crate::lifecycle::{RenewError, Settings, check, keys, renew};

mod fake_api;
use fake_api::{FakeApi, NAMESPACE, TOUCHED};

fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn days(n: u64) -> Duration {
    Duration::from_secs(86_400 * n)
}

/// The CA in a rotation's renewal window (365-day certificates, 25 days left).
fn rotation_due() -> SystemTime {
    t0() + days(340)
}

fn names(s: &Settings) -> [String; 3] {
    [s.issuer.clone(), s.agent.clone(), s.controller.clone()]
}

fn generation(data: &SecretData) -> u64 {
    let text = std::str::from_utf8(data.get(keys::GENERATION).unwrap()).unwrap();
    text.parse().unwrap()
}

/// (method, name, status) of each write the fake answered.
fn write_log(fake: &FakeApi) -> Vec<(Method, String, u16)> {
    let writes = fake.writes().into_iter();
    writes.map(|w| (w.method, w.name, w.status)).collect()
}

fn conflict_on(err: &RenewError) -> &str {
    match err {
        RenewError::Store(StoreError::Conflict { name }) => name,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// The issuer holds a CA with both identities signed by it and trusting it, all at one
/// generation, and `check` passes; returns (generation, ca.crt).
fn expect_valid(fake: &FakeApi, s: &Settings, now: SystemTime) -> (u64, Vec<u8>) {
    let issuer = fake.data(&s.issuer).unwrap();
    let ca = issuer.get(keys::CA_CRT).unwrap().to_vec();
    for secret in [&s.agent, &s.controller] {
        let id = fake.data(secret).unwrap();
        assert!(cert::is_signed_by(id.get(keys::TLS_CRT).unwrap(), &ca));
        assert_eq!(id.get(keys::CA_CRT), Some(ca.as_slice()), "{secret} trust");
        assert_eq!(generation(&id), generation(&issuer), "{secret} generation");
    }
    let report = check(&fake.store(), s, now).unwrap();
    assert!(!report.needs_attention(), "{report}");
    (generation(&issuer), ca)
}

#[test]
fn renew_from_empty_creates_three_opaque_secrets() {
    let fake = FakeApi::new();
    let s = Settings::default();
    let out = renew(&fake.store(), &s, t0()).unwrap();
    assert_eq!(
        (out.generation, out.written.to_vec()),
        (1, names(&s).to_vec())
    );

    let created: Vec<_> = names(&s).map(|n| (Method::POST, n, 201)).into();
    assert_eq!(write_log(&fake), created);
    for write in fake.writes() {
        let body = &write.body;
        assert_eq!(body["kind"], "Secret");
        assert_eq!(body["type"], "Opaque");
        assert_eq!(body["metadata"]["namespace"], NAMESPACE);
        let labels = &body["metadata"]["labels"];
        assert_eq!(labels[MANAGED_BY_LABEL.0], MANAGED_BY_LABEL.1);
        assert_eq!(labels[COMPONENT_LABEL.0], COMPONENT_LABEL.1);
        // Base64 on the wire: "1" is "MQ==".
        assert_eq!(body["data"][keys::GENERATION], "MQ==", "{}", write.name);
    }
    // The same keys as a DirStore holds.
    let keys_of = |name: &str| -> Vec<String> {
        let data = fake.data(name).unwrap();
        data.0.into_keys().collect()
    };
    assert_eq!(keys_of(&s.issuer), ["ca.crt", "ca.key", "generation"]);
    for identity in [&s.agent, &s.controller] {
        assert_eq!(
            keys_of(identity),
            ["ca.crt", "generation", "tls.crt", "tls.key"]
        );
    }
    assert_eq!(expect_valid(&fake, &s, t0()).0, 1);
}

#[test]
fn second_renew_writes_nothing() {
    let fake = FakeApi::new();
    let s = Settings::default();
    renew(&fake.store(), &s, t0()).unwrap();
    let (writes, versions) = (fake.writes().len(), fake.versions());

    let out = renew(&fake.store(), &s, t0() + days(300)).unwrap();
    assert_eq!((out.generation, out.written), (1, Vec::<String>::new()));
    assert_eq!(fake.writes().len(), writes, "no POST or PUT");
    assert_eq!(fake.versions(), versions);
}

#[test]
fn rotation_replaces_each_secret_at_the_version_it_read() {
    let fake = FakeApi::new();
    let s = Settings::default();
    renew(&fake.store(), &s, t0()).unwrap();
    // Someone annotated the agent identity (a backup tool, say): kept across the replace.
    fake.touch(&s.agent);
    let versions = fake.versions();
    let before = fake.writes().len();

    let out = renew(&fake.store(), &s, rotation_due()).unwrap();
    assert_eq!((out.generation, out.written.len()), (2, 3));
    let replaced = fake.writes().split_off(before);
    assert_eq!(replaced.len(), 3);
    for (write, name) in replaced.iter().zip(names(&s)) {
        assert_eq!(
            (&write.method, &write.name, write.status),
            (&Method::PUT, &name, 200)
        );
        assert_eq!(write.resource_version.as_ref(), Some(&versions[&name]));
    }
    let agent = fake.object(&s.agent).unwrap();
    assert_eq!(agent["metadata"]["annotations"][TOUCHED], "another-writer");
    assert_eq!(expect_valid(&fake, &s, rotation_due()).0, 2);
}

#[test]
fn concurrent_rotation_conflicts_and_the_rerun_resumes_the_winners_generation() {
    let fake = FakeApi::new();
    let s = Settings::default();
    renew(&fake.store(), &s, t0()).unwrap();
    let old_ca = fake
        .data(&s.issuer)
        .unwrap()
        .get(keys::CA_CRT)
        .unwrap()
        .to_vec();
    let identities = [fake.data(&s.agent), fake.data(&s.controller)];
    // The other Job read the same versions and rotates first.
    let winner = fake.fork();
    renew(&winner.store(), &s, rotation_due()).unwrap();
    let winners_issuer = winner.data(&s.issuer).unwrap();
    fake.race_next_write(&s.issuer, Some(winners_issuer.clone()));

    let err = renew(&fake.store(), &s, rotation_due()).unwrap_err();
    assert_eq!(conflict_on(&err), s.issuer);
    assert_eq!(err.metric_label(), "conflict");
    assert_eq!(
        err.to_string(),
        "another `hawser certs` run changed secret hawser-agent-issuer; rerun — the next run resumes"
    );
    // Nothing overwritten: the winner's issuer stands, the identities are untouched.
    let last = write_log(&fake).pop().unwrap();
    assert_eq!(last, (Method::PUT, s.issuer.clone(), 409));
    assert_eq!(fake.data(&s.issuer).unwrap(), winners_issuer);
    assert_eq!([fake.data(&s.agent), fake.data(&s.controller)], identities);

    let later = rotation_due() + Duration::from_secs(600);
    let out = renew(&fake.store(), &s, later).unwrap();
    assert_eq!((out.generation, out.written), (2, names(&s)[1..].to_vec()));
    let (generation, ca) = expect_valid(&fake, &s, later);
    assert_eq!(generation, 2);
    assert_eq!(Some(ca.as_slice()), winners_issuer.get(keys::CA_CRT));
    for secret in [&s.agent, &s.controller] {
        let id = fake.data(secret).unwrap();
        assert_eq!(id.get(keys::PREVIOUS_CA_CRT), Some(old_ca.as_slice()));
    }
}

#[test]
fn concurrent_bootstrap_conflicts_on_create_and_the_rerun_resumes() {
    let fake = FakeApi::new();
    let s = Settings::default();
    let winner = fake.fork();
    renew(&winner.store(), &s, t0()).unwrap();
    let winners_issuer = winner.data(&s.issuer).unwrap();
    fake.race_next_write(&s.issuer, Some(winners_issuer.clone()));

    let err = renew(&fake.store(), &s, t0()).unwrap_err();
    assert_eq!(conflict_on(&err), s.issuer);
    assert_eq!(
        write_log(&fake),
        [(Method::POST, s.issuer.clone(), 409)],
        "AlreadyExists"
    );
    assert_eq!(fake.data(&s.issuer).unwrap(), winners_issuer);
    assert!(fake.data(&s.agent).is_none() && fake.data(&s.controller).is_none());

    let out = renew(&fake.store(), &s, t0()).unwrap();
    assert_eq!((out.generation, out.written), (1, names(&s)[1..].to_vec()));
    let (_, ca) = expect_valid(&fake, &s, t0());
    assert_eq!(Some(ca.as_slice()), winners_issuer.get(keys::CA_CRT));
}

#[test]
fn identity_changed_between_read_and_write_conflicts_and_the_rerun_finishes() {
    let fake = FakeApi::new();
    let s = Settings::default();
    renew(&fake.store(), &s, t0()).unwrap();
    let agent = fake.data(&s.agent).unwrap();
    let before = fake.writes().len();
    fake.race_next_write(&s.agent, None);

    let err = renew(&fake.store(), &s, rotation_due()).unwrap_err();
    assert_eq!(conflict_on(&err), s.agent);
    let attempted = write_log(&fake).split_off(before);
    assert_eq!(
        attempted,
        [
            (Method::PUT, s.issuer.clone(), 200),
            (Method::PUT, s.agent.clone(), 409)
        ],
        "the controller identity is not attempted"
    );
    assert_eq!(fake.data(&s.agent).unwrap(), agent, "not overwritten");
    assert_eq!(generation(&fake.data(&s.issuer).unwrap()), 2);

    let out = renew(&fake.store(), &s, rotation_due()).unwrap();
    assert_eq!((out.generation, out.written), (2, names(&s)[1..].to_vec()));
    assert_eq!(expect_valid(&fake, &s, rotation_due()).0, 2);
    let agent = fake.object(&s.agent).unwrap();
    assert_eq!(agent["metadata"]["annotations"][TOUCHED], "another-writer");
}

#[test]
fn check_reads_only_the_identity_secrets() {
    let fake = FakeApi::new();
    let s = Settings::default();
    let empty = check(&fake.store(), &s, t0()).unwrap();
    assert!(empty.needs_attention());
    assert_eq!(empty.certificates[0].problem.as_deref(), Some("missing"));

    renew(&fake.store(), &s, t0()).unwrap();
    let seen = fake.requests().len();
    let report = check(&fake.store(), &s, t0()).unwrap();
    assert!(!report.needs_attention(), "{report}");
    assert_eq!(report.certificates.len(), 4);
    assert!(
        report
            .to_string()
            .contains("hawser-agent-identity tls.crt: notAfter=")
    );
    let read: Vec<_> = fake.requests()[seen..]
        .iter()
        .map(|r| (r.method.clone(), r.name.clone()))
        .collect();
    assert_eq!(
        read,
        [
            (Method::GET, s.agent.clone()),
            (Method::GET, s.controller.clone())
        ]
    );
    assert!(
        check(&fake.store(), &s, t0() + days(336))
            .unwrap()
            .needs_attention()
    );
}

#[test]
fn a_write_without_a_read_creates_and_never_overwrites() {
    let fake = FakeApi::new();
    let s = Settings::default();
    renew(&fake.store(), &s, t0()).unwrap();
    let agent = fake.data(&s.agent).unwrap();
    let mut changed = agent.clone();
    changed.insert("extra", "x");

    let store = fake.store();
    let err = store.write(&s.agent, &changed).unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
    assert_eq!(fake.data(&s.agent).unwrap(), agent);

    // Once read, the write replaces that version, and the next one the version written.
    store.read(&s.agent).unwrap();
    store.write(&s.agent, &changed).unwrap();
    changed.insert("extra", "y");
    store.write(&s.agent, &changed).unwrap();
    assert_eq!(fake.data(&s.agent).unwrap(), changed);
    let log = write_log(&fake);
    assert_eq!(
        log[log.len() - 2..],
        [
            (Method::PUT, s.agent.clone(), 200),
            (Method::PUT, s.agent.clone(), 200)
        ]
    );
}

#[test]
fn api_errors_name_the_secret() {
    let fake = FakeApi::new();
    let s = Settings::default();
    fake.forbid(&s.agent);
    let err = renew(&fake.store(), &s, t0()).unwrap_err();
    assert_eq!(err.metric_label(), "read");
    assert_eq!(
        err.to_string(),
        "failed to read secret hawser-system/hawser-agent-identity"
    );
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert!(cause.contains("forbidden"), "{cause}");
    assert!(fake.writes().is_empty());
}

#[test]
fn debug_shows_versions_never_values() {
    let fake = FakeApi::new();
    let s = Settings::default();
    renew(&fake.store(), &s, t0()).unwrap();
    let store = fake.store();
    let data = store.read(&s.agent).unwrap().unwrap();
    let key = std::str::from_utf8(data.get(keys::TLS_KEY).unwrap()).unwrap();
    let body = key.lines().nth(1).unwrap();
    for shown in [format!("{store:?}"), format!("{data:?}")] {
        assert!(
            !shown.contains("PRIVATE KEY") && !shown.contains(body),
            "{shown}"
        );
    }
    let shown = format!("{store:?}");
    assert!(
        shown.contains(NAMESPACE) && shown.contains(&s.agent),
        "{shown}"
    );
}

#[test]
fn renew_runs_on_a_multi_thread_runtime_worker() {
    let fake = FakeApi::new();
    let store = fake.store();
    let task = fake
        .runtime()
        .spawn(async move { renew(&store, &Settings::default(), t0()) });
    let out = fake.runtime().block_on(task).unwrap().unwrap();
    assert_eq!(out.written.len(), 3);
}

#[test]
fn a_current_thread_runtime_is_an_error_not_a_deadlock() {
    let fake = FakeApi::new();
    let store = fake.store();
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = current.block_on(async { store.read("x") }).unwrap_err();
    assert_eq!(err.metric_label(), "blocking");

    let client = {
        let _context = current.enter();
        let (service, _handle) = tower_test::mock::pair::<
            http::Request<kube::client::Body>,
            http::Response<kube::client::Body>,
        >();
        Client::new(service, NAMESPACE)
    };
    let on_current = KubeSecretStore::new(client, NAMESPACE, current.handle().clone());
    let err = on_current.read("x").unwrap_err();
    assert!(err.to_string().contains("multi-threaded"), "{err}");
    assert!(fake.requests().is_empty());
}

#[test]
fn invalid_names_are_refused_before_any_request() {
    let fake = FakeApi::new();
    let store = fake.store();
    for bad in ["", "a/b", ".hidden"] {
        assert!(matches!(
            store.read(bad),
            Err(StoreError::InvalidName { .. })
        ));
    }
    let mut data = SecretData::default();
    data.insert("../x", "v");
    assert!(matches!(
        store.write("ok", &data),
        Err(StoreError::InvalidName { .. })
    ));
    assert!(fake.requests().is_empty());
}
