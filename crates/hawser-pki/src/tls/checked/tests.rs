#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

use super::*;
use crate::issue;
use crate::tls::testing::{AGENT, CONTROLLER, DAY, HOUR, Pki, chain, material};

#[test]
fn a_chain_checked_again_is_not_validated_again() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let controller = material(&pki.files(Role::Controller), Role::Controller, now);
    let checked = CheckedChains::default();
    for later in [now, now + HOUR, now + DAY] {
        checked
            .verify_client_chain(&agent, &chain(&pki.controller), CONTROLLER, later)
            .unwrap();
        checked
            .verify_server_chain(&controller, &chain(&pki.agent), AGENT, later)
            .unwrap();
    }
    assert_eq!(checked.full_checks(), 2);
}

#[test]
fn a_chain_remembered_as_valid_is_refused_once_it_expired() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let short = issue::new_identity(&pki.ca, Role::Controller, CONTROLLER, now, 1).unwrap();
    let checked = CheckedChains::default();
    checked
        .verify_client_chain(&agent, &chain(&short), CONTROLLER, now)
        .unwrap();
    let err = checked
        .verify_client_chain(&agent, &chain(&short), CONTROLLER, now + 2 * DAY)
        .unwrap_err();
    assert_eq!(err.metric_label(), "expired", "{err}");
}

#[test]
fn a_chain_of_the_previous_ca_remembered_as_valid_is_refused_once_its_trust_ended() {
    let now = SystemTime::now();
    let old = Pki::new(now);
    let new = Pki::under(issue::new_ca(now, 365, 2).unwrap(), now, 30);
    let agent = material(
        &new.files(Role::Agent).with_previous(&old.ca, now + HOUR),
        Role::Agent,
        now,
    );
    let checked = CheckedChains::default();
    for chain in [chain(&old.controller), chain(&new.controller)] {
        checked
            .verify_client_chain(&agent, &chain, CONTROLLER, now)
            .unwrap();
    }
    let later = now + 2 * HOUR;
    let err = checked
        .verify_client_chain(&agent, &chain(&old.controller), CONTROLLER, later)
        .unwrap_err();
    assert_eq!(err.metric_label(), "previous_ca_expired", "{err}");
    checked
        .verify_client_chain(&agent, &chain(&new.controller), CONTROLLER, later)
        .unwrap();
}

#[test]
fn a_chain_remembered_under_one_revision_is_checked_again_under_another() {
    let now = SystemTime::now();
    let (pki, stranger) = (Pki::new(now), Pki::new(now));
    let trusting = material(&pki.files(Role::Agent), Role::Agent, now);
    let other = material(&stranger.files(Role::Agent), Role::Agent, now);
    let checked = CheckedChains::default();
    checked
        .verify_client_chain(&trusting, &chain(&pki.controller), CONTROLLER, now)
        .unwrap();
    let err = checked
        .verify_client_chain(&other, &chain(&pki.controller), CONTROLLER, now)
        .unwrap_err();
    assert_eq!(err.metric_label(), "unknown_ca", "{err}");
}

#[test]
fn a_chain_remembered_for_one_name_or_role_is_checked_again_for_another() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let checked = CheckedChains::default();
    checked
        .verify_client_chain(&agent, &chain(&pki.controller), CONTROLLER, now)
        .unwrap();
    let err = checked
        .verify_client_chain(&agent, &chain(&pki.controller), "another-controller", now)
        .unwrap_err();
    assert_eq!(err.metric_label(), "wrong_name", "{err}");
    let err = checked
        .verify_server_chain(&agent, &chain(&pki.controller), CONTROLLER, now)
        .unwrap_err();
    assert_eq!(err.metric_label(), "wrong_role", "{err}");
}

#[test]
fn a_clock_set_back_before_the_check_checks_again() {
    let issued = SystemTime::now();
    let pki = Pki::new(issued);
    let agent = material(&pki.files(Role::Agent), Role::Agent, issued);
    let checked = CheckedChains::default();
    checked
        .verify_client_chain(&agent, &chain(&pki.controller), CONTROLLER, issued)
        .unwrap();
    let err = checked
        .verify_client_chain(
            &agent,
            &chain(&pki.controller),
            CONTROLLER,
            issued - 10 * DAY,
        )
        .unwrap_err();
    assert_eq!(err.metric_label(), "not_yet_valid", "{err}");
}

#[test]
fn refusals_are_not_remembered_and_another_chain_is_checked_on_its_own() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let checked = CheckedChains::default();
    let other = issue::new_identity(&pki.ca, Role::Controller, "intruder", now, 30).unwrap();
    for _ in 0..2 {
        checked
            .verify_client_chain(&agent, &chain(&other), CONTROLLER, now)
            .unwrap_err();
    }
    assert_eq!(checked.full_checks(), 2);
    checked
        .verify_client_chain(&agent, &chain(&pki.controller), CONTROLLER, now)
        .unwrap();
    checked
        .verify_client_chain(&agent, &chain(&other), CONTROLLER, now)
        .unwrap_err();
    assert_eq!(checked.full_checks(), 4);
}
