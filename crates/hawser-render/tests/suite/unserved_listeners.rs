//! A listener the Gateway API accepts but whose port this configuration
//! cannot serve (something else binds it) is reported as such in the status
//! the render computes: `Accepted=False` (`PortUnavailable`), not
//! programmed, and its Gateway says which listeners are not valid.

use crate::support;

use hawser_model::{Listener, Object};
use hawser_render::{RenderConfig, Renderer, condition};

#[test]
fn a_listener_on_a_port_something_else_binds_is_not_programmed() {
    let case = support::render_case("gateway-streams");
    let mut store = case.store.clone();
    let mut gateway = store.gateways().next().expect("a Gateway").clone();
    let template = gateway.listeners[0].clone();
    gateway.listeners.push(Listener {
        name: "tcp-on-80".to_string(),
        port: 80,
        protocol: "TCP".to_string(),
        hostname: None,
        tls: None,
        ..template
    });
    let key = gateway.key.clone();
    store.insert(Object::Gateway(gateway));

    let rendered = Renderer::new(RenderConfig::default())
        .expect("renderer")
        .render(&store)
        .expect("render");
    let status = rendered
        .gateway_status
        .gateways
        .iter()
        .find(|g| g.gateway == key)
        .expect("the Gateway's status");
    let listener = status
        .listeners
        .iter()
        .find(|l| l.name == "tcp-on-80")
        .expect("the listener's status");
    let accepted = condition(&listener.conditions, "Accepted").expect("Accepted");
    assert_eq!(
        (accepted.is_true(), accepted.reason),
        (false, "PortUnavailable")
    );
    assert!(
        accepted.message.contains("cannot be served"),
        "{accepted:?}"
    );
    let programmed = condition(&listener.conditions, "Programmed").expect("Programmed");
    assert!(!programmed.is_true(), "{programmed:?}");
    let gateway_accepted = condition(&status.conditions, "Accepted").expect("Accepted");
    assert_eq!(
        (gateway_accepted.is_true(), gateway_accepted.reason),
        (true, "ListenersNotValid")
    );
    assert!(
        gateway_accepted.message.contains("tcp-on-80"),
        "{gateway_accepted:?}"
    );
    // The other listeners are untouched.
    let others = status.listeners.iter().filter(|l| l.name != "tcp-on-80");
    for other in others {
        let programmed = condition(&other.conditions, "Programmed").expect("Programmed");
        assert!(programmed.is_true(), "{other:?}");
    }
}
