//! The config policy in the webhook: a render holding the built-in mirror
//! Lua is judged like any other (a plain Ingress is admitted beside a
//! mirroring route), and the same `lua-load` line with another file behind
//! it is refused.

use std::path::Path;

use hawser_haproxy::HaproxyBinary;
use hawser_render::Renderer;

use super::*;
use crate::gate;
use crate::manifests::load_dir;
use crate::webhook::review::{Candidate, review};

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
    rendered.files.insert(
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
