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

#[test]
fn a_version_after_another_reads_as_a_decode_of_its_own_does() {
    let first = plan();
    let first_files = files(&first);
    let first_bytes = encode(&first).unwrap();
    let read = decode(PLAN_FORMAT, &first_bytes, &first_files).unwrap();
    let unchanged_in = |files: &FileSet| {
        let files = files.clone();
        let first_files = first_files.clone();
        move |path: &str| files.get(path) == first_files.get(path)
    };
    // The same plan, a route added: the route map is read again.
    let routed = with_route(&first, "b.example.com/");
    let routed_files = files(&routed);
    let earlier = Earlier {
        plan: &read,
        same_bytes: true,
    };
    let after = decode_after(
        PLAN_FORMAT,
        &first_bytes,
        &routed_files,
        earlier,
        unchanged_in(&routed_files),
    )
    .unwrap();
    assert_eq!(after, routed);
    // Another plan, the same files: the entries are the earlier ones.
    let mut moved = first.clone();
    Arc::make_mut(&mut moved.backends[0]).servers[0].address = "10.0.0.2".into();
    let moved_bytes = encode(&moved).unwrap();
    let earlier = Earlier {
        plan: &read,
        same_bytes: false,
    };
    let after = decode_after(
        PLAN_FORMAT,
        &moved_bytes,
        &first_files,
        earlier,
        unchanged_in(&first_files),
    )
    .unwrap();
    assert_eq!(after, moved);
}

#[test]
fn a_changed_map_file_is_checked_as_in_any_decode() {
    let first = plan();
    let first_files = files(&first);
    let bytes = encode(&first).unwrap();
    let read = decode(PLAN_FORMAT, &bytes, &first_files).unwrap();
    let earlier = Earlier {
        plan: &read,
        same_bytes: true,
    };
    // Only the twin changed: it is read, and must hold its map's entries.
    let mut files = first_files.clone();
    files.insert(
        crate::ROUTES_TWIN_MAP_PATH,
        FileKind::Map,
        "other.example.com/ be_app_web_80\n",
    );
    let unchanged = |path: &str| files.get(path) == first_files.get(path);
    let Err(PlanFormatError::MapFile { path, reason }) =
        decode_after(PLAN_FORMAT, &bytes, &files, earlier, unchanged)
    else {
        panic!("a twin that differs from its map must be refused");
    };
    assert_eq!(path, crate::ROUTES_TWIN_MAP_PATH);
    assert_eq!(reason, "a twin must hold the entries of its map");
    // A map file that does not read back as entries.
    let mut files = first_files.clone();
    for path in [crate::ROUTES_MAP_PATH, crate::ROUTES_TWIN_MAP_PATH] {
        files.insert(path, FileKind::Map, "no-value-line\n\n");
    }
    let unchanged = |path: &str| files.get(path) == first_files.get(path);
    assert!(matches!(
        decode_after(PLAN_FORMAT, &bytes, &files, earlier, unchanged),
        Err(PlanFormatError::MapFile { .. })
    ));
}
