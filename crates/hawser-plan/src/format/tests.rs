#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::{BackendMode, BackendPlan, FileKind, MapEntry, MapPlan, ServerPlan, ServerState};

fn plan() -> Plan {
    Plan {
        structure_digest: "abc".into(),
        backends: vec![
            BackendPlan {
                name: "be_app_web_80".into(),
                source: "Service app/web port 80".into(),
                balance: "roundrobin".into(),
                timeout_server: Some("30s".into()),
                timeout_connect: None,
                servers: vec![ServerPlan {
                    name: "s1".into(),
                    address: "10.0.0.1".into(),
                    port: 8080,
                    weight: 1,
                    state: ServerState::Maintenance,
                    resolve: false,
                    proto: Some("h2".into()),
                    keywords: Vec::new(),
                }],
                mode: BackendMode::Tcp,
                cookie: None,
                role: Default::default(),
                service: None,
            }
            .into(),
        ],
        maps: vec![
            MapPlan::longest_first(
                crate::ROUTES_MAP_PATH,
                vec![MapEntry {
                    key: "a.example.com/".into(),
                    value: "be_app_web_80".into(),
                }],
            )
            .with_twin(crate::ROUTES_TWIN_MAP_PATH),
        ],
        ..Plan::default()
    }
}

/// The version's files: each map's file, and its twin's.
fn files(plan: &Plan) -> FileSet {
    let mut files = FileSet::default();
    for map in &plan.maps {
        files.insert(map.path.clone(), FileKind::Map, map.to_file());
        if let Some(twin) = &map.twin {
            files.insert(twin.clone(), FileKind::Map, map.to_file());
        }
    }
    files
}

/// A plan as senders of formats 0 to 2 wrote it: maps with their entries.
fn with_entries(plan: &Plan) -> Vec<u8> {
    serde_json::to_vec(plan).unwrap()
}

#[test]
fn the_current_format_round_trips_with_the_map_entries_in_their_files() {
    let plan = plan();
    let bytes = encode(&plan).unwrap();
    assert!(
        !String::from_utf8_lossy(&bytes).contains("a.example.com/"),
        "the plan carries no map entry: {}",
        String::from_utf8_lossy(&bytes)
    );
    assert_eq!(decode(PLAN_FORMAT, &bytes, &files(&plan)).unwrap(), plan);
}

#[test]
fn every_earlier_format_is_read() {
    let plan = plan();
    for format in 0..PLAN_FORMAT {
        assert_eq!(
            decode(format, &with_entries(&plan), &FileSet::default()).unwrap(),
            plan,
            "format {format}"
        );
    }
}

#[test]
fn map_files_that_are_not_the_plans_maps_are_refused_naming_the_map() {
    let plan = plan();
    let bytes = encode(&plan).unwrap();
    let refused = |files: &FileSet| match decode(PLAN_FORMAT, &bytes, files) {
        Err(error @ PlanFormatError::MapFile { .. }) => {
            assert_eq!(error.metric_label(), "plan_map_file");
            error.to_string()
        }
        other => panic!("{other:?}"),
    };
    assert!(refused(&FileSet::default()).contains(crate::ROUTES_MAP_PATH));

    let mut files = files(&plan);
    files.insert(crate::ROUTES_TWIN_MAP_PATH, FileKind::Map, "other be\n");
    assert!(refused(&files).contains("a twin must hold the entries of its map"));

    let mut files = self::files(&plan);
    files.insert(crate::ROUTES_MAP_PATH, FileKind::Map, "no-value\n");
    assert!(refused(&files).contains("does not read back"));

    // Entries in the plan as well as in the file: not this format.
    let mut files = self::files(&plan);
    files.insert(
        crate::ROUTES_MAP_PATH,
        FileKind::Map,
        plan.maps[0].to_file(),
    );
    assert!(matches!(
        decode(PLAN_FORMAT, &with_entries(&plan), &files),
        Err(PlanFormatError::MapFile { .. })
    ));
}

#[test]
fn an_unknown_format_is_refused_naming_both_versions() {
    let error = decode(PLAN_FORMAT + 1, b"{}", &FileSet::default()).unwrap_err();
    assert_eq!(error.metric_label(), "unknown_plan_format");
    assert_eq!(
        error.to_string(),
        format!(
            "plan format {} is not one this agent reads (it reads formats up to {PLAN_FORMAT}); \
             run an agent as new as the controller",
            PLAN_FORMAT + 1
        )
    );
}

#[test]
fn a_malformed_plan_says_so() {
    let error = decode(PLAN_FORMAT, b"not json", &FileSet::default()).unwrap_err();
    assert!(matches!(
        error,
        PlanFormatError::Malformed {
            format: PLAN_FORMAT,
            ..
        }
    ));
}

/// `plan` with its route map (and twin) holding `key` too.
fn with_route(plan: &Plan, key: &str) -> Plan {
    let mut next = plan.clone();
    let routes = &mut next.maps[0];
    routes.entries.push(MapEntry::new(key, "be_app_web_80"));
    routes
        .entries
        .sort_by(|a, b| MapEntry::longest_first(&a.key, &b.key));
    next
}

/// `plan` with backends named `names` (sorted), copies of its first one.
fn with_backends(plan: &Plan, names: &[&str]) -> Plan {
    let mut next = plan.clone();
    next.backends = names
        .iter()
        .map(|name| {
            let mut backend = BackendPlan::clone(&plan.backends[0]);
            backend.name = (*name).to_string();
            Arc::new(backend)
        })
        .collect();
    next
}

/// Reads `plan` (encoded) after `earlier`, with files compared to
/// `earlier_files`.
fn read_after(
    plan: &Plan,
    files: &FileSet,
    earlier: Option<(&Decoded, &[u8])>,
    earlier_files: &FileSet,
) -> Result<Decoded, PlanFormatError> {
    let bytes = encode(plan).unwrap();
    let earlier = earlier.map(|(decoded, bytes)| Earlier { decoded, bytes });
    let unchanged = |path: &str| files.get(path) == earlier_files.get(path);
    decode_after(PLAN_FORMAT, &bytes, files, earlier, unchanged)
}

#[test]
fn a_version_after_another_reads_as_a_decode_of_its_own_does() {
    let first = with_backends(&plan(), &["be_a", "be_b", "be_c", "be_d"]);
    let first_files = files(&first);
    let first_bytes = encode(&first).unwrap();
    let read = read_after(&first, &first_files, None, &FileSet::default()).unwrap();
    assert_eq!(*read.plan, first);
    let earlier = Some((&read, &first_bytes[..]));
    // The same plan, a route added: the route map is read again.
    let routed = with_route(&first, "b.example.com/");
    let after = read_after(&routed, &files(&routed), earlier, &first_files).unwrap();
    assert_eq!(*after.plan, routed);
    // A backend changed, one gone, one new: the others are taken as they
    // were, the changed and the new ones read.
    let mut changed = with_backends(&first, &["be_a", "be_b", "be_bb", "be_d"]);
    Arc::make_mut(&mut changed.backends[0]).servers[0].address = "10.0.0.2".into();
    let after = read_after(&changed, &first_files, earlier, &first_files).unwrap();
    assert_eq!(*after.plan, changed);
    let taken: Vec<bool> = after
        .plan
        .backends
        .iter()
        .map(|b| read.plan.backends.iter().any(|e| Arc::ptr_eq(b, e)))
        .collect();
    assert_eq!(taken, [false, true, false, true]);
    // And the version after that reads from this one as well.
    let bytes = encode(&changed).unwrap();
    let again = read_after(&first, &first_files, Some((&after, &bytes)), &first_files).unwrap();
    assert_eq!(*again.plan, first);
}

#[test]
fn a_changed_map_file_is_checked_as_in_any_decode() {
    let first = plan();
    let first_files = files(&first);
    let bytes = encode(&first).unwrap();
    let read = read_after(&first, &first_files, None, &FileSet::default()).unwrap();
    let earlier = Some((&read, &bytes[..]));
    // Only the twin changed: it is read, and must hold its map's entries.
    let mut changed = first_files.clone();
    changed.insert(
        crate::ROUTES_TWIN_MAP_PATH,
        FileKind::Map,
        "other.example.com/ be_app_web_80\n",
    );
    let Err(PlanFormatError::MapFile { path, reason }) =
        read_after(&first, &changed, earlier, &first_files)
    else {
        panic!("a twin that differs from its map must be refused");
    };
    assert_eq!(path, crate::ROUTES_TWIN_MAP_PATH);
    assert_eq!(reason, "a twin must hold the entries of its map");
    // A map file that does not read back as entries.
    let mut changed = first_files.clone();
    for path in [crate::ROUTES_MAP_PATH, crate::ROUTES_TWIN_MAP_PATH] {
        changed.insert(path, FileKind::Map, "no-value-line\n\n");
    }
    assert!(matches!(
        read_after(&first, &changed, earlier, &first_files),
        Err(PlanFormatError::MapFile { .. })
    ));
}

#[test]
fn a_backend_that_does_not_parse_is_refused_even_among_taken_ones() {
    let first = with_backends(&plan(), &["be_a", "be_b"]);
    let first_files = files(&first);
    let first_bytes = encode(&first).unwrap();
    let read = read_after(&first, &first_files, None, &FileSet::default()).unwrap();
    let text = String::from_utf8(first_bytes.clone()).unwrap();
    let broken = text.replacen("\"name\":\"be_b\"", "\"name\":7", 1);
    assert_ne!(broken, text);
    let earlier = Earlier {
        decoded: &read,
        bytes: &first_bytes,
    };
    assert!(matches!(
        decode_after(
            PLAN_FORMAT,
            broken.as_bytes(),
            &first_files,
            Some(earlier),
            |_| true
        ),
        Err(PlanFormatError::Malformed { .. })
    ));
}

/// The plan as format 3 was first written: serde's output of these fields.
#[derive(serde::Serialize)]
struct AsSerdeWritesIt<'a> {
    structure_digest: &'a str,
    backends: &'a [Arc<BackendPlan>],
    maps: Vec<WireMap<'a>>,
    certificates: &'a [crate::CertificatePlan],
    crt_lists: &'a [crate::CrtListPlan],
}

#[test]
fn a_plan_is_written_as_serde_writes_its_fields_and_each_backend_is_found_in_it() {
    let plan = with_backends(&plan(), &["be_a", "be_b", "be_c"]);
    let expected = serde_json::to_vec(&AsSerdeWritesIt {
        structure_digest: &plan.structure_digest,
        backends: &plan.backends,
        maps: plan
            .maps
            .iter()
            .map(|m| WireMap {
                path: &m.path,
                match_kind: m.match_kind,
                twin: m.twin.as_deref(),
            })
            .collect(),
        certificates: &plan.certificates,
        crt_lists: &plan.crt_lists,
    })
    .unwrap();
    let encoded = encode_after(&plan, None).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&encoded.bytes),
        String::from_utf8_lossy(&expected)
    );
    for (backend, at) in plan.backends.iter().zip(&encoded.backends_at) {
        assert_eq!(
            encoded.bytes[at.clone()],
            serde_json::to_vec(backend).unwrap()
        );
    }
}

#[test]
fn a_backend_kept_from_the_plan_before_is_copied_from_its_bytes() {
    let first = with_backends(&plan(), &["be_a", "be_b", "be_c", "be_d"]);
    let mut earlier = encode_after(&first, None).unwrap();
    // Mark be_d's bytes in the earlier encoding: copied, they show.
    let at = earlier.backends_at[3].clone();
    let marked = br#"{"marked":true}"#;
    earlier.bytes.splice(at.clone(), marked.iter().copied());
    earlier.backends_at[3] = at.start..at.start + marked.len();
    // be_b changed, be_c gone, be_bb new; be_a and be_d kept (shared).
    let mut next = first.clone();
    Arc::make_mut(&mut next.backends[1]).servers[0].port = 9090;
    let bb = Arc::new(BackendPlan {
        name: "be_bb".into(),
        ..BackendPlan::clone(&first.backends[2])
    });
    next.backends = vec![
        Arc::clone(&first.backends[0]),
        Arc::clone(&next.backends[1]),
        bb,
        Arc::clone(&first.backends[3]),
    ];
    let encoded = encode_after(&next, Some((&first, &earlier))).unwrap();
    let written = |i: usize| {
        String::from_utf8_lossy(&encoded.bytes[encoded.backends_at[i].clone()]).into_owned()
    };
    assert_eq!(written(3), r#"{"marked":true}"#);
    for i in 0..3 {
        assert_eq!(
            written(i),
            serde_json::to_string(&next.backends[i]).unwrap(),
            "backend {i}"
        );
    }
}

/// A route map's entries as `(key, value)`, in file order.
type Routes = Vec<(String, String)>;

/// An edit of a route map, named.
type RoutesEdit = (&'static str, fn(&mut Routes));

/// `plan` with its route map (and twin) holding `entries`, in file order.
fn with_routes(plan: &Plan, entries: &[(String, String)]) -> Plan {
    let mut next = plan.clone();
    next.maps[0].entries = entries
        .iter()
        .map(|(key, value)| MapEntry::new(key.as_str(), value.as_str()))
        .collect();
    next
}

#[test]
fn a_changed_map_shares_the_entries_it_had_and_reads_as_a_decode_of_its_own() {
    let routes: Routes = (0..40)
        .map(|i| (format!("h{i:02}.example.com/"), format!("be_{}", i % 3)))
        .collect();
    let first = with_routes(&plan(), &routes);
    let first_files = files(&first);
    let bytes = encode(&first).unwrap();
    let read = read_after(&first, &first_files, None, &FileSet::default()).unwrap();
    let earlier = Some((&read, &bytes[..]));
    let before = &read.plan.maps[0].entries;
    let shared = |entry: &MapEntry| before.iter().any(|e| Arc::ptr_eq(&e.key, &entry.key));

    let edits: [RoutesEdit; 5] = [
        ("one added", |r| {
            r.insert(20, ("new.example.com/".into(), "be_new".into()));
        }),
        ("two gone in a row", |r| {
            r.drain(10..12);
        }),
        ("a value changed", |r| r[5].1 = "be_other".into()),
        ("more gone in a row than are looked past", |r| {
            r.drain(3..3 + LOOK_AHEAD + 2);
        }),
        ("all changed", |r| {
            for route in r.iter_mut() {
                route.1.push('x');
            }
        }),
    ];
    for (edit, apply) in edits {
        let mut changed = routes.clone();
        apply(&mut changed);
        let next = with_routes(&first, &changed);
        let after = read_after(&next, &files(&next), earlier, &first_files).unwrap();
        assert_eq!(*after.plan, next, "{edit}");
        let entries = &after.plan.maps[0].entries;
        let expected_shared = entries
            .iter()
            .filter(|entry| before.contains(entry))
            .count();
        let sharing = entries.iter().filter(|entry| shared(entry)).count();
        // Past a run of gone entries longer than is looked past, lines are
        // read anew: the same entries, not shared.
        if edit == "more gone in a row than are looked past" {
            assert!(sharing < expected_shared, "{edit}");
        } else {
            assert_eq!(sharing, expected_shared, "{edit}");
        }
    }
}

#[test]
fn a_map_file_whose_last_line_is_not_ended_is_refused() {
    let plan = plan();
    let bytes = encode(&plan).unwrap();
    let mut files = files(&plan);
    for path in [crate::ROUTES_MAP_PATH, crate::ROUTES_TWIN_MAP_PATH] {
        files.insert(path, FileKind::Map, "a.example.com/ be_app_web_80");
    }
    let error = decode(PLAN_FORMAT, &bytes, &files).unwrap_err();
    assert!(error.to_string().contains("does not read back"), "{error}");
}
