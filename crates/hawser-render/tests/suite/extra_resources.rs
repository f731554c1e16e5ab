//! The kinds a configuration adds (`watch.extraResources`) reach templates
//! as `resources.<Kind>`, each kind's objects in namespace/name order.

use crate::support;

use std::collections::BTreeMap;

use hawser_model::{ObjectKey, Store};
use hawser_render::{CONFIG_PATH, RenderConfig};
use serde_json::json;

#[test]
fn templates_read_extra_resources_by_kind() {
    let mut config = RenderConfig::default();
    config.templates.snippets.insert(
        "global-limits".to_string(),
        "{% for cm in resources.ConfigMap %}  setenv LIMIT_{{ cm.metadata.name }} {{ cm.data.maxconn }}\n{% endfor %}"
            .to_string(),
    );
    let mut store = Store::new();
    let config_map = |name: &str, maxconn: &str| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "app"},
            "data": {"maxconn": maxconn},
        })
    };
    store.extra.replace(
        "ConfigMap",
        BTreeMap::from([
            (ObjectKey::new("app", "b"), config_map("b", "20")),
            (ObjectKey::new("app", "a"), config_map("a", "10")),
        ]),
    );
    let rendered = support::renderer(config.clone())
        .render(&store)
        .expect("render");
    let text = &rendered
        .files
        .get(CONFIG_PATH)
        .expect("haproxy.cfg")
        .content;
    let text = String::from_utf8_lossy(text);
    assert!(
        text.contains("  setenv LIMIT_a 10\n  setenv LIMIT_b 20\n"),
        "{text}"
    );

    // A change of an extra object is a change of the configuration.
    let before = rendered.plan.structure_digest.clone();
    store.extra.replace(
        "ConfigMap",
        BTreeMap::from([(ObjectKey::new("app", "a"), config_map("a", "11"))]),
    );
    let after = support::renderer(config).render(&store).expect("render");
    assert_ne!(before, after.plan.structure_digest);
}
