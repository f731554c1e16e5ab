#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

use super::*;
use crate::issue;
use crate::tls::testing::{AGENT, CONTROLLER, DAY, HOUR, Pki, chain, material};

#[test]
fn the_agent_accepts_the_controller() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    verify_client_chain(&agent, &chain(&pki.controller), CONTROLLER, now).unwrap();
}

#[test]
fn an_agent_certificate_cannot_act_as_the_controller() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let err = verify_client_chain(&agent, &chain(&pki.agent), CONTROLLER, now).unwrap_err();
    assert_eq!(err.metric_label(), "wrong_role");
    assert!(
        err.to_string()
            .contains("an agent certificate cannot act as the controller"),
        "{err}"
    );
}

#[test]
fn a_client_from_an_unknown_ca_is_refused() {
    let now = SystemTime::now();
    let (pki, stranger) = (Pki::new(now), Pki::new(now));
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let err =
        verify_client_chain(&agent, &chain(&stranger.controller), CONTROLLER, now).unwrap_err();
    assert_eq!(err.metric_label(), "unknown_ca", "{err}");
    assert!(
        err.to_string().contains("not signed by a ca trusted now"),
        "{err}"
    );
}

#[test]
fn an_expired_client_is_refused_with_its_not_after() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let then = now - 10 * DAY;
    let expired = issue::new_identity(&pki.ca, Role::Controller, CONTROLLER, then, 1).unwrap();
    let err = verify_client_chain(&agent, &chain(&expired), CONTROLLER, now).unwrap_err();
    assert_eq!(err.metric_label(), "expired", "{err}");
    let not_after = crate::cert::inspect(expired.cert_pem.as_bytes())
        .unwrap()
        .not_after;
    assert!(
        err.to_string()
            .contains(&format!("expired at {}", rfc3339(not_after))),
        "{err}"
    );
}

/// Certificates issued on a clock that is right, loaded and checked on clocks a day
/// behind or a day ahead (an NTP step on either side): every side loads its own identity
/// and accepts the other's, so a clock step never turns the fleet away.
#[test]
fn a_fresh_peer_is_accepted_on_a_clock_a_day_behind_or_ahead() {
    let issued = SystemTime::now();
    let pki = Pki::new(issued);
    for now in [issued - DAY, issued + DAY] {
        let agent = material(&pki.files(Role::Agent), Role::Agent, now);
        let controller = material(&pki.files(Role::Controller), Role::Controller, now);
        verify_client_chain(&agent, &chain(&pki.controller), CONTROLLER, now).unwrap();
        verify_server_chain(&controller, &chain(&pki.agent), AGENT, now).unwrap();
    }
}

#[test]
fn a_client_with_another_name_is_refused() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let other = issue::new_identity(&pki.ca, Role::Controller, "intruder", now, 30).unwrap();
    let err = verify_client_chain(&agent, &chain(&other), CONTROLLER, now).unwrap_err();
    assert_eq!(err.metric_label(), "wrong_name", "{err}");
    let message = err.to_string();
    assert!(
        message.contains("\"intruder\"") && message.contains("expected \"hawser-controller\""),
        "{message}"
    );
}

#[test]
fn no_certificate_is_refused() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let agent = material(&pki.files(Role::Agent), Role::Agent, now);
    let err = verify_client_chain(&agent, &[], CONTROLLER, now).unwrap_err();
    assert_eq!(err.metric_label(), "no_certificate");
}

#[test]
fn the_controller_accepts_the_agent_and_only_the_agent() {
    let now = SystemTime::now();
    let pki = Pki::new(now);
    let controller = material(&pki.files(Role::Controller), Role::Controller, now);
    verify_server_chain(&controller, &chain(&pki.agent), AGENT, now).unwrap();
    let err = verify_server_chain(&controller, &chain(&pki.controller), AGENT, now).unwrap_err();
    assert_eq!(err.metric_label(), "wrong_role", "{err}");
    assert!(
        err.to_string()
            .contains("a controller certificate cannot act as the agent"),
        "{err}"
    );
}

#[test]
fn a_peer_of_the_previous_ca_is_trusted_until_the_deadline() {
    let now = SystemTime::now();
    let old = Pki::new(now);
    let new = Pki::under(issue::new_ca(now, 365, 2).unwrap(), now, 30);
    let agent = material(
        &new.files(Role::Agent).with_previous(&old.ca, now + HOUR),
        Role::Agent,
        now,
    );
    // A controller that has not reloaded yet still presents the old identity.
    verify_client_chain(&agent, &chain(&old.controller), CONTROLLER, now).unwrap();
    verify_client_chain(&agent, &chain(&new.controller), CONTROLLER, now).unwrap();

    let later = now + 2 * HOUR;
    let err = verify_client_chain(&agent, &chain(&old.controller), CONTROLLER, later).unwrap_err();
    assert_eq!(err.metric_label(), "previous_ca_expired", "{err}");
    assert!(err.to_string().contains("trusted only until"), "{err}");
    verify_client_chain(&agent, &chain(&new.controller), CONTROLLER, later).unwrap();
}

/// How a rotation looks while only one side has reloaded: the overlap lets the reloaded
/// side accept the other's old identity, but the side still on the old revision cannot
/// know the new CA, so new connections fail until both have reloaded.
#[test]
fn mid_rotation_only_the_reloaded_side_accepts_the_other() {
    let now = SystemTime::now();
    let old = Pki::new(now);
    let new = Pki::under(issue::new_ca(now, 365, 2).unwrap(), now, 30);
    let agent_reloaded = material(
        &new.files(Role::Agent).with_previous(&old.ca, now + HOUR),
        Role::Agent,
        now,
    );
    let controller_stale = material(&old.files(Role::Controller), Role::Controller, now);

    verify_client_chain(&agent_reloaded, &chain(&old.controller), CONTROLLER, now).unwrap();
    let err = verify_server_chain(&controller_stale, &chain(&new.agent), AGENT, now).unwrap_err();
    assert_eq!(err.metric_label(), "unknown_ca", "{err}");
}
