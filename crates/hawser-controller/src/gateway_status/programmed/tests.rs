use hawser_render::{ListenerStatus, condition};

use super::*;
use crate::fleet::AgentLinkStatus;

fn programmed_condition(ok: bool) -> Condition {
    Condition {
        condition_type: PROGRAMMED,
        status: if ok {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        },
        reason: if ok { "Programmed" } else { "Invalid" },
        message: String::new(),
        observed_generation: Some(3),
    }
}

fn gateway(programmed: bool, attached_routes: u32) -> GatewayObjectStatus {
    GatewayObjectStatus {
        gateway: ObjectKey::new("app", "edge"),
        conditions: vec![programmed_condition(programmed)],
        listeners: vec![ListenerStatus {
            name: "http".into(),
            attached_routes,
            supported_kinds: Vec::new(),
            conditions: vec![programmed_condition(programmed)],
        }],
    }
}

fn fleet(serving: &[Option<u64>]) -> FleetStatus {
    FleetStatus {
        epoch: Some(1),
        agents: serving
            .iter()
            .enumerate()
            .map(|(i, generation)| {
                let name = format!("10.0.0.{i}:9443");
                let agent = AgentLinkStatus {
                    addr: name.clone(),
                    serving_generation: *generation,
                    ..AgentLinkStatus::default()
                };
                (name, agent)
            })
            .collect(),
    }
}

fn reason_of(conditions: &[Condition]) -> (ConditionStatus, &'static str) {
    let c = condition(conditions, PROGRAMMED).unwrap();
    (c.status, c.reason)
}

#[test]
fn every_agent_must_serve_the_generation() {
    assert!(Rollout::of(&fleet(&[Some(7), Some(8)])).serves(7).is_ok());
    let behind = Rollout::of(&fleet(&[Some(7), Some(6)])).serves(7);
    assert!(behind.unwrap_err().contains("generation 7"));
    assert!(Rollout::of(&fleet(&[Some(7), None])).serves(7).is_err());
    let none = Rollout::of(&fleet(&[])).serves(1).unwrap_err();
    assert!(none.contains("no agent"), "{none}");
}

#[test]
fn the_pending_message_does_not_change_as_agents_catch_up() {
    let one = Rollout::of(&fleet(&[Some(7), Some(6), Some(6)])).serves(7);
    let two = Rollout::of(&fleet(&[Some(7), Some(7), Some(6)])).serves(7);
    assert_eq!(one, two);
}

#[test]
fn a_gateway_is_carried_since_the_generation_it_last_changed_in() {
    let mut since = CarriedSince::default();
    assert_eq!(since.record(&gateway(true, 0), 4), 4);
    // Another object changed: generation 5 carries the Gateway as 4 did.
    assert_eq!(since.record(&gateway(true, 0), 5), 4);
    // A route attached: its listener changed in 6.
    assert_eq!(since.record(&gateway(true, 1), 6), 6);
    since.retain(|_| false);
    assert_eq!(since.record(&gateway(true, 1), 7), 7);
}

#[test]
fn programmed_waits_for_addresses_then_the_fleet() {
    let ready = programmed_status(&gateway(true, 0), None, None);
    assert_eq!(ready, gateway(true, 0));

    let waiting = programmed_status(&gateway(true, 0), None, Some("waiting for agents"));
    assert_eq!(
        reason_of(&waiting.conditions),
        (ConditionStatus::False, "Pending")
    );
    let listener = &waiting.listeners[0].conditions;
    assert_eq!(reason_of(listener), (ConditionStatus::False, "Pending"));
    let message = &condition(listener, PROGRAMMED).unwrap().message;
    assert_eq!(message, "waiting for agents");
    assert_eq!(
        condition(listener, PROGRAMMED).unwrap().observed_generation,
        Some(3)
    );

    let problem = ("AddressNotUsable", "ask for another".to_string());
    let unusable = programmed_status(&gateway(true, 0), Some(&problem), Some("waiting"));
    assert_eq!(
        reason_of(&unusable.conditions),
        (ConditionStatus::False, "AddressNotUsable")
    );
    let served = programmed_status(&gateway(true, 0), Some(&problem), None);
    assert_eq!(
        reason_of(&served.listeners[0].conditions),
        (ConditionStatus::True, "Programmed"),
        "addresses do not hold a listener back"
    );

    // What the render refused stays refused, with its own reason.
    let invalid = programmed_status(&gateway(false, 0), Some(&problem), Some("waiting"));
    assert_eq!(
        reason_of(&invalid.conditions),
        (ConditionStatus::False, "Invalid")
    );
    assert_eq!(
        reason_of(&invalid.listeners[0].conditions),
        (ConditionStatus::False, "Invalid")
    );
}
