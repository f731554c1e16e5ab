//! `HawserConfig` (`hawser.dev/v1alpha1`): what a cluster tells hawser —
//! which resources to watch, where the agents are, the settings templates
//! read, template overrides and snippets, and validation tests.
//!
//! ```text
//!  HawserConfig ──spec.settings / spec.templates──► RenderConfig (hawser-render, validated once)
//!               ──spec.watch──────────────────────► the controller's sources
//!               ──spec.agents─────────────────────► agent discovery
//!               ◄─status.conditions[Valid]─────── the controller (reason names the failing template or test)
//! ```
//!
//! The validation tests' types ([`ValidationTest`]) are shared with the
//! local `--config FILE`, which holds the same `tests:` list.
//!
//! The YAML in `deploy/crds/` is generated from these types ([`crd_yaml`])
//! and a test keeps it in sync.
//!
//! It depends on `hawser-render` (a spec becomes a `RenderConfig`) and
//! must not depend on the controller, the agent or a Kubernetes client.

use std::collections::BTreeMap;

use hawser_render::{RenderConfig, Settings, TemplateConfig};
use kube::CustomResource;
use kube::CustomResourceExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod expectation;
pub use expectation::{InvalidTest, TestExpectation, TestRequest, ValidationTest, validate_tests};

/// The configuration of one hawser installation.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "hawser.dev",
    version = "v1alpha1",
    kind = "HawserConfig",
    namespaced,
    status = "HawserConfigStatus",
    shortname = "hcfg",
    printcolumn = r#"{"name":"Valid","type":"string","jsonPath":".status.conditions[?(@.type==\"Valid\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Valid\")].reason"}"#
)]
#[serde(default, rename_all = "camelCase")]
pub struct HawserConfigSpec {
    /// Which objects the controller reads.
    pub watch: WatchSpec,
    /// Where the agents (HAProxy pods) are.
    pub agents: AgentsSpec,
    /// The settings the templates read (ports, timeouts, logging...), as in
    /// a local `--config` file; checked when the controller reads them.
    #[schemars(schema_with = "free_object")]
    pub settings: SettingsValue,
    /// Template overrides and snippets at extension points.
    pub templates: TemplateConfig,
    /// Requests the rendered configuration must answer as stated.
    pub tests: Vec<ValidationTest>,
}

/// An object the API server keeps as given; hawser validates it itself
/// (with errors that name the field), in the webhook and the `Valid` condition.
fn free_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// Settings as the user wrote them (camelCase), turned into
/// [`Settings`] (with defaults for what is missing) by [`HawserConfigSpec::render_config`].
pub type SettingsValue = BTreeMap<String, serde_json::Value>;

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct WatchSpec {
    /// Namespaces to read; empty reads all.
    pub namespaces: Vec<String>,
    /// A label selector every watched object must match (e.g. `team=web`).
    pub label_selector: Option<String>,
    /// Further kinds templates can read (`resources.<kind>`).
    pub extra_resources: Vec<ExtraResource>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct ExtraResource {
    /// e.g. `v1` or `example.com/v1`.
    pub api_version: String,
    pub kind: String,
    pub namespaces: Vec<String>,
    pub label_selector: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct AgentsSpec {
    /// Label selector of the HAProxy pods whose agents get the configuration.
    pub selector: String,
    /// The agents' control port.
    pub port: u16,
}

impl Default for AgentsSpec {
    fn default() -> Self {
        AgentsSpec {
            selector: "app.kubernetes.io/component=haproxy".to_string(),
            port: 7443,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct HawserConfigStatus {
    /// `Valid`: whether the spec renders and its tests pass; the reason
    /// names the failing template or test.
    pub conditions: Vec<Condition>,
    pub observed_generation: Option<i64>,
}

/// A status condition, shaped like Kubernetes' `metav1.Condition`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// CamelCase, e.g. `RenderFailed`, `TestFailed`.
    pub reason: String,
    pub message: String,
    /// RFC 3339.
    pub last_transition_time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl HawserConfigSpec {
    /// The render configuration this spec describes, validated (its tests
    /// too, so a test that cannot be run is refused with the rest).
    pub fn render_config(&self) -> Result<RenderConfig, String> {
        let settings: Settings = serde_json::from_value(serde_json::Value::Object(
            self.settings.clone().into_iter().collect(),
        ))
        .map_err(|e| format!("spec.settings: {e}"))?;
        let config = RenderConfig {
            settings,
            templates: self.templates.clone(),
        };
        config.validate().map_err(|e| format!("spec: {e}"))?;
        validate_tests(&self.tests).map_err(|e| format!("spec.{e}"))?;
        Ok(config)
    }
}

/// The CRD as `kubectl apply` takes it (what `deploy/crds/` holds).
pub fn crd_yaml() -> String {
    let crd = HawserConfig::crd();
    let body = serde_saphyr::to_string(&crd).unwrap_or_default();
    format!("# Generated from crates/hawser-crd by `hawser crd`; do not edit.\n{body}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
    use super::*;

    const CRD_PATH: &str = "../../deploy/crds/hawserconfigs.hawser.dev.yaml";

    #[test]
    fn deploy_crd_matches_the_rust_types() {
        let generated = crd_yaml();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(CRD_PATH);
        if std::env::var_os("HAWSER_UPDATE_CRDS").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let stored = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            stored == generated,
            "{} is out of date: run `HAWSER_UPDATE_CRDS=1 cargo test -p hawser-crd` (or `hawser crd > {CRD_PATH}`)",
            path.display()
        );
    }

    #[test]
    fn the_stored_crd_parses_back() {
        let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
            serde_saphyr::from_str(&crd_yaml()).unwrap();
        assert_eq!(crd.spec.group, "hawser.dev");
        assert_eq!(crd.spec.names.kind, "HawserConfig");
    }

    #[test]
    fn a_spec_becomes_a_validated_render_config() {
        let spec: HawserConfigSpec = serde_saphyr::from_str(
            "settings:\n  httpPort: 8080\n  httpsPort: 8443\ntemplates:\n  snippets:\n    frontend-extra: \"# x\"\ntests:\n  - name: shop\n    request: { host: shop.example.com, path: / }\n    expect: { status: 200 }\n",
        )
        .unwrap();
        let config = spec.render_config().unwrap();
        assert_eq!(config.settings.http_port, 8080);
        assert_eq!(spec.tests[0].expect.status, Some(200));
        assert_eq!(spec.agents.port, 7443);
    }

    #[test]
    fn bad_settings_name_the_field() {
        let spec: HawserConfigSpec =
            serde_saphyr::from_str("settings:\n  httpPort: 80\n  httpsPort: 80\n").unwrap();
        let error = spec.render_config().unwrap_err();
        assert!(error.contains("httpPort"), "{error}");
        let spec: HawserConfigSpec = serde_saphyr::from_str("settings:\n  htpPort: 80\n").unwrap();
        assert!(spec.render_config().unwrap_err().contains("htpPort"));
    }

    #[test]
    fn a_test_that_cannot_run_is_refused_with_its_name() {
        let spec: HawserConfigSpec = serde_saphyr::from_str(
            "tests:\n  - name: shop\n    request: { host: shop.example.com, path: shop }\n    expect: { status: 200 }\n",
        )
        .unwrap();
        let error = spec.render_config().unwrap_err();
        assert!(
            error.starts_with("spec.tests[0] (\"shop\"): request.path"),
            "{error}"
        );
    }
}
