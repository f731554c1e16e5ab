//! The `Valid` condition of the HawserConfig: whether its spec renders and
//! its validation tests pass, and if not, the reason naming the failing
//! setting, template or test. Written only when it changes.

use ::kube::Api;
use ::kube::Client;
use ::kube::api::{Patch, PatchParams};
use hawser_crd::{Condition, HawserConfig, ValidationTest};
use hawser_haproxy::HaproxyBinary;
use hawser_model::Store;
use hawser_render::RenderConfig;
use serde_json::json;

use crate::proof::run_validation_tests;

/// Why a HawserConfig spec is not in force, as its `Valid` condition says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `InvalidSpec` (a setting or template) or `TestFailed`.
    pub reason: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn invalid_spec(message: impl Into<String>) -> Refusal {
        Refusal {
            reason: "InvalidSpec",
            message: message.into(),
        }
    }

    pub fn test_failed(message: impl Into<String>) -> Refusal {
        Refusal {
            reason: "TestFailed",
            message: message.into(),
        }
    }
}

/// Proves a spec's validation tests against `store` with the real HAProxy;
/// the refusal names the first test that fails.
pub async fn prove_tests(
    config: &RenderConfig,
    store: &Store,
    tests: &[ValidationTest],
    haproxy: Option<&HaproxyBinary>,
) -> Result<(), Refusal> {
    if tests.is_empty() {
        return Ok(());
    }
    let Some(haproxy) = haproxy else {
        return Err(Refusal::test_failed(
            "spec.tests need HAProxy beside the controller (HAWSER_HAPROXY or PATH) and none was found",
        ));
    };
    let report = run_validation_tests(config, store, tests, haproxy)
        .await
        .map_err(|e| Refusal::test_failed(format!("spec.tests could not run: {e}")))?;
    match report.first_failure() {
        Some(failure) => Err(Refusal::test_failed(format!(
            "{failure} ({})",
            report.summary()
        ))),
        None => Ok(()),
    }
}

/// Sets `Valid` on HawserConfig `namespace/name` from `verdict`.
pub async fn report_config(
    client: Client,
    namespace: &str,
    name: &str,
    verdict: &Result<(), Refusal>,
) -> Result<(), ::kube::Error> {
    let configs: Api<HawserConfig> = Api::namespaced(client, namespace);
    let Some(config) = configs.get_opt(name).await? else {
        return Ok(());
    };
    let (status, reason, message) = match verdict {
        Ok(()) => (
            "True",
            "Rendered",
            "the configuration renders and its tests pass".to_string(),
        ),
        Err(refusal) => ("False", refusal.reason, refusal.message.clone()),
    };
    let current = config
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Valid"));
    let generation = config.metadata.generation;
    if current.is_some_and(|c| {
        c.status == status
            && c.reason == reason
            && c.message == message
            && c.observed_generation == generation
    }) {
        return Ok(());
    }
    let condition = Condition {
        type_: "Valid".to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message,
        last_transition_time: now_rfc3339(),
        observed_generation: generation,
    };
    let patch = json!({
        "status": { "conditions": [condition], "observedGeneration": generation }
    });
    configs
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}
