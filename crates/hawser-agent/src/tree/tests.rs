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

/// The `staging.*` entries under the store's base.
fn staging_dirs(store: &TreeStore) -> Vec<String> {
    fs::read_dir(store.base())
        .expect("read base")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(STAGING_PREFIX))
        .collect()
}

#[test]
fn a_dropped_staging_dir_removes_what_was_written() {
    let (_dir, store) = store();
    let path = store.base().join("staging.4.1");
    let staging = staging::StagingDir::create(path.clone()).expect("create");
    fs::create_dir(staging.path().join("maps")).expect("mkdir");
    fs::write(staging.path().join("maps/a.map"), "a b\n").expect("write");
    drop(staging);
    assert!(!path.exists(), "{} is left behind", path.display());
}

#[test]
fn a_renamed_staging_dir_is_kept() {
    let (_dir, store) = store();
    let staging = staging::StagingDir::create(store.base().join("staging.5.1")).expect("create");
    fs::write(staging.path().join("haproxy.cfg"), "global\n").expect("write");
    let target = store.base().join("v5");
    staging.rename_to(&target).expect("rename");
    assert!(target.join("haproxy.cfg").is_file());
    assert!(staging_dirs(&store).is_empty());
}

#[test]
fn a_stage_that_fails_half_way_leaves_nothing_and_the_next_one_applies() {
    let (_dir, store) = store();
    let serving = store.stage(1, &files("a b\n"), &plan()).expect("v1");
    store.publish(serving).expect("publish");
    // Written in name order: `haproxy.cfg` first, then a path that escapes;
    // and a file where the next one needs a directory.
    let mut escapes = files("a c\n");
    escapes.insert("z/../x", FileKind::Map, "x");
    let mut file_then_dir = FileSet::default();
    file_then_dir.insert("a", FileKind::Map, "a b\n");
    file_then_dir.insert("a/b", FileKind::Map, "a b\n");
    for (what, bad) in [
        ("an escaping path", escapes),
        ("a file as a dir", file_then_dir),
    ] {
        let err = store.stage(2, &bad, &plan()).expect_err(what);
        assert_ne!(err.metric_label(), "disk_full", "{what}: {err}");
        assert!(staging_dirs(&store).is_empty(), "{what}: {err}");
        assert!(
            !store.version_path(VersionName(2.into())).exists(),
            "{what}"
        );
    }
    assert_eq!(store.current(), Some(serving));
    assert_eq!(store.read(serving).expect("read"), (files("a b\n"), plan()));
    let next = store.stage(2, &files("a c\n"), &plan()).expect("v2");
    assert_eq!(store.read(next).expect("read"), (files("a c\n"), plan()));
}

#[test]
fn no_space_and_no_quota_are_a_full_state_directory() {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    let dir = Path::new("/state/tree");
    for code in [ENOSPC, EDQUOT] {
        let err = TreeError::Io {
            action: "cannot write",
            path: dir.join("staging.3.1/haproxy.cfg"),
            source: io::Error::from_raw_os_error(code),
        }
        .full_in(dir);
        assert_eq!(err.metric_label(), "disk_full", "{err}");
        let text = err.to_string();
        assert!(
            text.starts_with("the state directory /state/tree is full: cannot write /state/tree/staging.3.1/haproxy.cfg: "),
            "{text}"
        );
    }
    let other = TreeError::Io {
        action: "cannot write",
        path: dir.join("x"),
        source: io::Error::from_raw_os_error(13),
    }
    .full_in(dir);
    assert_eq!(other.metric_label(), "io");
}

#[test]
fn a_version_links_the_files_it_shares_with_current() {
    use std::os::unix::fs::MetadataExt;
    let (_dir, store) = store();
    let first = store.stage(1, &files("a b\n"), &plan()).expect("stage");
    // Without `current`, every file is written.
    let second = store.stage(2, &files("a c\n"), &plan()).expect("stage");
    let inode = |v: VersionName, p: &str| {
        fs::metadata(store.version_path(v).join(p))
            .expect("meta")
            .ino()
    };
    assert_ne!(inode(first, "certs/a.pem"), inode(second, "certs/a.pem"));

    store.publish(first).expect("publish");
    let third = store.stage(3, &files("a c\n"), &plan()).expect("stage");
    assert_eq!(
        inode(first, "certs/a.pem"),
        inode(third, "certs/a.pem"),
        "the unchanged certificate is shared"
    );
    assert_eq!(inode(first, "haproxy.cfg"), inode(third, "haproxy.cfg"));
    assert_ne!(
        inode(first, "maps/exact.map"),
        inode(third, "maps/exact.map"),
        "the changed map is written"
    );
    assert_eq!(store.read(third).expect("read"), (files("a c\n"), plan()));
    store
        .verify(third)
        .expect("the shared files match the new MANIFEST");

    // Removing the donor leaves the new version whole.
    store.publish(third).expect("publish");
    fs::remove_dir_all(store.version_path(first)).expect("remove");
    assert_eq!(store.read(third).expect("read"), (files("a c\n"), plan()));
}

#[test]
fn a_staging_given_up_stops_and_leaves_nothing() {
    let (_dir, store) = store();
    let given_up = AtomicBool::new(true);
    let err = store
        .stage_unless(3, &files("a b\n"), &plan(), &given_up)
        .expect_err("given up before it began");
    assert_eq!(err.metric_label(), "given_up");

    // Given up while it writes: many files, each synced.
    let mut many = files("a b\n");
    for i in 0..2_000 {
        many.insert(format!("maps/{i}.map"), FileKind::Map, format!("k{i} v\n"));
    }
    let given_up = AtomicBool::new(false);
    let base = store.base().to_path_buf();
    let writing = || {
        fs::read_dir(&base)
            .expect("base")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(STAGING_PREFIX))
    };
    let err = std::thread::scope(|scope| {
        let staging = scope.spawn(|| store.stage_unless(4, &many, &plan(), &given_up));
        while !writing() && !staging.is_finished() {
            std::thread::yield_now();
        }
        given_up.store(true, Ordering::Relaxed);
        staging.join().expect("stages")
    })
    .expect_err("given up while it wrote");
    assert_eq!(
        err.to_string(),
        "the staging of v00000000000000000004 was given up: a newer version came"
    );
    assert!(!writing(), "its staging directory is removed");
    assert_eq!(store.versions().expect("versions"), Vec::new());
}
