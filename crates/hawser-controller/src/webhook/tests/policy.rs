//! The config policy in the webhook: a render holding the built-in mirror
//! Lua is judged like any other (a plain Ingress is admitted beside a
//! mirroring route), and the same `lua-load` line with another file behind
//! it is refused; the Lua/config polyglot override is denied with nothing run.

use std::path::Path;
use std::sync::Arc;

use hawser_haproxy::HaproxyBinary;
use hawser_render::Renderer;

use super::*;
use crate::gate;
use crate::webhook::review::{Candidate, review};
use hawser_k8s::load_dir;

/// The Gateway API fixture whose HTTPRoute mirrors requests (its
/// EndpointSlices are templates the e2e test fills in: not needed here).
fn mirror_store() -> Store {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hawser/tests/fixtures/gateway_request_mirror");
    load_dir(&dir).unwrap().store
}

fn plain_ingress() -> Candidate {
    Candidate::Ingress(Box::new(serde_json::from_value(ingress("/shop")).unwrap()))
}

#[tokio::test]
async fn a_plain_ingress_is_admitted_beside_a_mirroring_route() {
    let store = mirror_store();
    let config = RenderConfig::default();
    let certificate = generate_default_certificate().unwrap();
    let rendered = Renderer::new(config.clone())
        .unwrap()
        .render(&store)
        .unwrap();
    let text = rendered.files.text(hawser_render::CONFIG_PATH).unwrap();
    assert!(text.contains("lua-load"), "the fixture must mirror");
    // With the real HAProxy when there is one: the gate's check too.
    let haproxy = HaproxyBinary::locate().ok();
    let verdict = review(
        &store,
        &config,
        &certificate,
        haproxy.as_ref(),
        &plain_ingress(),
    )
    .await;
    assert!(verdict.allowed, "{verdict:?}");
}

#[test]
fn the_mirror_line_with_another_file_behind_it_is_refused() {
    let store = mirror_store();
    let config = RenderConfig::default();
    let mut rendered = Renderer::new(config.clone())
        .unwrap()
        .render(&store)
        .unwrap();
    let policy = gate::config_policy(&config);
    gate::check_policy(&policy, &rendered.files).unwrap();

    let (lua, kind) = rendered
        .files
        .iter()
        .find(|(path, _)| path.ends_with(".lua"))
        .map(|(path, file)| (path.to_string(), file.kind))
        .expect("the built-in Lua is in the render");
    Arc::make_mut(&mut rendered.files).insert(
        lua,
        kind,
        b"os.execute('touch /tmp/hawser-owned')\n".to_vec(),
    );
    let error = gate::check_policy(&policy, &rendered.files).unwrap_err();
    assert!(
        matches!(&error, gate::GateError::Refused(e) if e.metric_label() == "foreign_lua"),
        "{error:?}"
    );
}

/// The polyglot of the issue: a `base/haproxy.cfg` override that is also a
/// Lua file, loading itself with a quoted `"lua-load"`. Denied, naming the
/// override and the line, with nothing run (the real HAProxy is given when
/// there is one; its Lua would write the marker).
#[tokio::test]
async fn the_polyglot_override_is_denied_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("lua-ran");
    let polyglot = format!(
        "--[[\nglobal\n  \"lua-load\" haproxy.cfg\ndefaults\n  mode http\n--]]\nlocal f = io.open(\"{}\", \"w\") f:write(\"ran\") f:close()\n",
        marker.display()
    );
    let spec: hawser_crd::HawserConfigSpec = serde_json::from_value(serde_json::json!({
        "templates": { "overrides": { "base/haproxy.cfg": polyglot } }
    }))
    .unwrap();
    let certificate = generate_default_certificate().unwrap();
    let haproxy = HaproxyBinary::locate().ok();
    let verdict = review(
        &mirror_store(),
        &RenderConfig::default(),
        &certificate,
        haproxy.as_ref(),
        &Candidate::Config(Box::new(spec)),
    )
    .await;
    assert!(!verdict.allowed, "{verdict:?}");
    let reason = verdict.reason.unwrap_or_default();
    assert!(
        reason.contains("config policy")
            && reason.contains("line 3")
            && reason.contains("override base/haproxy.cfg"),
        "{reason}"
    );
    assert!(!marker.exists(), "the Lua ran");
}
