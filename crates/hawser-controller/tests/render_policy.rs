//! Every built-in render passes the config policy: each input case under
//! hawser-render's `tests/inputs/`, judged as the gate judges it (hawser's
//! paths from the case's own settings, the built-in Lua by its digest).
//!
//! It lives with the gate, which owns the policy, and reads the render
//! crate's cases through that crate's test support, so the render crate does
//! not depend on the controller.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../../hawser-render/tests/support/mod.rs"]
mod support;

use hawser_controller::gate::{check_policy, config_policy};
use hawser_render::{CONFIG_PATH, Settings};

#[test]
fn every_input_case_passes_the_policy() {
    let mut refused = Vec::new();
    for name in support::case_names() {
        let case = support::render_case(&name);
        let verdict = check_policy(&config_policy(&case.config), &case.rendered.files);
        let user_written = !case.config.templates.snippets.is_empty()
            || !case.config.templates.overrides.is_empty();
        match verdict {
            Ok(()) => {}
            // A user's snippet may be refused, never the built-in templates.
            Err(error) if user_written && error.to_string().contains("(from snippet ") => {}
            Err(error) => refused.push(format!("{name}: {error}")),
        }
    }
    assert!(refused.is_empty(), "{refused:#?}");
}

/// A mirror route with hawser's runtime socket: the built-in `lua-load` and
/// the mirror socket beside the runtime socket pass.
#[test]
fn a_mirror_render_with_a_runtime_socket_passes() {
    let mut case = support::render_case("gateway-mirror");
    case.config.settings = Settings {
        runtime_socket: Some("/run/hawser/admin.sock".to_string()),
        ..case.config.settings
    };
    let rendered = support::renderer(case.config.clone())
        .render(&case.store)
        .unwrap();
    let config = rendered.files.text(CONFIG_PATH).unwrap();
    assert!(
        config.contains("lua-load") && config.contains("unix@/run/hawser/mirror.sock"),
        "{config}"
    );
    check_policy(&config_policy(&case.config), &rendered.files).unwrap();
}
