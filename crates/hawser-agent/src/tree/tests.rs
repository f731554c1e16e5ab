use std::os::unix::fs::PermissionsExt;

use super::*;

fn files(map: &str) -> FileSet {
    let mut files = FileSet::default();
    files.insert("haproxy.cfg", FileKind::Config, "global\n");
    files.insert("maps/exact.map", FileKind::Map, map);
    files.insert("certs/a.pem", FileKind::Certificate, "secret");
    files
}

fn plan() -> Plan {
    Plan {
        structure_digest: "s".to_string(),
        ..Plan::default()
    }
}

fn store() -> (tempfile::TempDir, TreeStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TreeStore::open(dir.path().join("tree")).expect("open");
    (dir, store)
}

#[test]
fn staged_version_round_trips_and_keys_are_private() {
    let (_dir, store) = store();
    let v = store.stage(7, &files("a b\n"), &plan()).expect("stage");
    assert_eq!(v.to_string(), "v00000000000000000007");
    assert_eq!(store.read(v).expect("read"), (files("a b\n"), plan()));
    let mode = |p: &str| {
        fs::metadata(store.version_path(v).join(p))
            .expect("meta")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("certs/a.pem"), 0o600);
    assert_eq!(mode("maps/exact.map") & 0o600, 0o600);
}

#[test]
fn restaging_the_same_generation_is_idempotent_but_never_overwrites() {
    let (_dir, store) = store();
    let v = store.stage(1, &files("a b\n"), &plan()).expect("stage");
    assert_eq!(store.stage(1, &files("a b\n"), &plan()).expect("again"), v);
    let err = store
        .stage(1, &files("a c\n"), &plan())
        .expect_err("other content");
    assert_eq!(err.metric_label(), "damaged");
    assert_eq!(store.read(v).expect("read"), (files("a b\n"), plan()));
}

#[test]
fn pointers_flip_atomically_and_roll_back_to_lkg() {
    let (_dir, store) = store();
    let v1 = store.stage(1, &files("a b\n"), &plan()).expect("v1");
    let v2 = store.stage(2, &files("a c\n"), &plan()).expect("v2");
    assert_eq!(store.current(), None);
    assert_eq!(store.roll_back().expect("no lkg"), None);
    store.publish(v1).expect("publish");
    store.mark_good(v1).expect("good");
    store.publish(v2).expect("publish v2");
    assert_eq!(store.current(), Some(v2));
    assert_eq!(
        fs::read_to_string(store.current_path().join("maps/exact.map")).expect("read via current"),
        "a c\n"
    );
    assert_eq!(store.roll_back().expect("roll back"), Some(v1));
    assert_eq!(store.current(), Some(v1));
    assert_eq!(store.lkg(), Some(v1));
}

#[test]
fn damage_is_detected() {
    let (_dir, store) = store();
    let v = store.stage(3, &files("a b\n"), &plan()).expect("stage");
    fs::write(store.version_path(v).join("maps/exact.map"), "a evil\n").expect("tamper");
    let err = store.verify(v).expect_err("damaged");
    assert!(err.to_string().contains("maps/exact.map"), "{err}");
    fs::remove_file(store.version_path(v).join(MANIFEST)).expect("rm");
    assert!(store.verify(v).is_err());
}

#[test]
fn leftover_staging_is_removed_on_open() {
    let (dir, store) = store();
    fs::create_dir(store.base().join("staging.9.1234")).expect("mkdir");
    let store = TreeStore::open(dir.path().join("tree")).expect("reopen");
    assert!(!store.base().join("staging.9.1234").exists());
}

#[test]
fn garbage_collection_keeps_every_pinned_version() {
    let (_dir, store) = store();
    let v: Vec<VersionName> = (1..=6)
        .map(|g| {
            store
                .stage(g, &files(&format!("k {g}\n")), &plan())
                .expect("stage")
        })
        .collect();
    store.mark_loaded(v[0]).expect("loaded");
    store.mark_good(v[2]).expect("lkg");
    store.publish(v[5]).expect("current");
    let removed = store.collect_garbage(1).expect("gc");
    assert_eq!(removed, vec![v[1], v[3]]);
    assert_eq!(
        store.versions().expect("versions"),
        vec![v[0], v[2], v[4], v[5]]
    );
}

#[test]
fn paths_that_escape_are_refused() {
    let (_dir, store) = store();
    for bad in ["../x", "/etc/passwd", "a/../../b", "MANIFEST", "PLAN", ""] {
        let mut f = FileSet::default();
        f.insert(bad, FileKind::Map, "x");
        assert!(store.stage(1, &f, &plan()).is_err(), "{bad:?}");
    }
}
