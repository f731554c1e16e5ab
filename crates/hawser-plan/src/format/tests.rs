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
