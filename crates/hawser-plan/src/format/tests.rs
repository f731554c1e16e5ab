#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::{BackendMode, BackendPlan, MapEntry, MapPlan, ServerPlan, ServerState};

fn plan() -> Plan {
    Plan {
        structure_digest: "abc".into(),
        backends: vec![BackendPlan {
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
        }],
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

#[test]
fn the_current_format_round_trips() {
    let plan = plan();
    let bytes = encode(&plan).unwrap();
    assert_eq!(decode(PLAN_FORMAT, &bytes).unwrap(), plan);
}

#[test]
fn every_earlier_format_is_read() {
    let plan = plan();
    for format in 1..PLAN_FORMAT {
        assert_eq!(decode(format, &encode(&plan).unwrap()).unwrap(), plan);
    }
}

#[test]
fn a_sender_from_before_the_format_field_is_read_as_format_1() {
    let plan = plan();
    assert_eq!(decode(0, &encode(&plan).unwrap()).unwrap(), plan);
}

#[test]
fn an_unknown_format_is_refused_naming_both_versions() {
    let error = decode(PLAN_FORMAT + 1, b"{}").unwrap_err();
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
    let error = decode(PLAN_FORMAT, b"not json").unwrap_err();
    assert!(matches!(
        error,
        PlanFormatError::Malformed {
            format: PLAN_FORMAT,
            ..
        }
    ));
}
