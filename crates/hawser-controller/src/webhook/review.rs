//! The verdict on one candidate object: a dry-run render of the current
//! objects with the candidate in place, then the gate's checks.

use std::time::Duration;

use hawser_crd::HawserConfigSpec;
use hawser_haproxy::HaproxyBinary;
use hawser_k8s::FromK8s;
use hawser_model::{Ingress, Object, ObjectKey, ObjectRef, Store};
use hawser_render::features::{
    AUTH_SECRET_ANNOTATION, ForeignAnnotations, Target, missing_users, read_annotations,
};
use hawser_render::{CONFIG_PATH, CertificatePem, RenderConfig, Renderer, Severity, culprit_at};
use k8s_openapi::api::networking::v1 as networking;

use super::reason;
use crate::gate::{self, GateError};

/// What is being admitted.
#[derive(Debug, Clone)]
pub enum Candidate {
    Ingress(Box<networking::Ingress>),
    Config(Box<HawserConfigSpec>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    /// Why not, naming the object, template or line at fault.
    pub reason: Option<String>,
    /// Caveats of an admitted object (a missing Service, a lost conflict).
    pub warnings: Vec<String>,
}

impl Verdict {
    fn deny(reason: impl Into<String>) -> Self {
        Verdict {
            allowed: false,
            reason: Some(reason.into()),
            warnings: Vec::new(),
        }
    }
}

/// The Secret a candidate Ingress's basic authentication names (in any
/// annotation dialect) when the snapshot does not hold it, and the refusal
/// the render gives for it: the cluster source keeps only the Secrets an
/// Ingress already names, so a new one cannot be judged here.
fn unread_auth_secret(
    store: &Store,
    candidate: &Candidate,
    config: &RenderConfig,
) -> Option<(ObjectKey, String)> {
    let Candidate::Ingress(ingress) = candidate else {
        return None;
    };
    let namespace = ingress.metadata.namespace.as_deref()?;
    let annotations = ingress.metadata.annotations.as_ref()?;
    let read = read_annotations(
        annotations,
        Target::Ingress,
        namespace,
        &config.settings.annotation_frontends,
        ForeignAnnotations::Ignore,
    )
    .ok()?;
    let key = ObjectKey::new(namespace, read.map.get(AUTH_SECRET_ANNOTATION)?);
    let refusal = read.in_their_words(missing_users(&key).to_string());
    store.secret(&key).is_none().then_some((key, refusal))
}

/// How long the check may take: well inside the API server's webhook timeout.
pub const REVIEW_DEADLINE: Duration = Duration::from_secs(4);

/// Judges `candidate` against `store` under `config`. The config policy
/// always runs, trusting the paths of `config` (the controller's own, never
/// the candidate's); `haproxy` runs the gate's `haproxy -c` when given.
pub async fn review(
    store: &Store,
    config: &RenderConfig,
    default_certificate: &CertificatePem,
    haproxy: Option<&HaproxyBinary>,
    candidate: &Candidate,
) -> Verdict {
    let policy = gate::config_policy(config);
    let unread = unread_auth_secret(store, candidate, config);
    let (store, config, subject) = match candidate {
        Candidate::Ingress(ingress) => {
            let model = match Ingress::from_k8s(ingress) {
                Ok(model) => model,
                Err(e) => return Verdict::deny(format!("the Ingress cannot be read: {e}")),
            };
            // O(1): the clone shares every node with the snapshot, and the
            // insert copies only the O(log n) path to the candidate.
            let mut with = store.clone();
            let object = Object::Ingress(model);
            let subject = object.object_ref();
            with.insert(object);
            (with, config.clone(), Some(subject))
        }
        Candidate::Config(spec) => match spec.render_config() {
            Ok(config) => (store.clone(), config, None),
            Err(e) => return Verdict::deny(format!("HawserConfig: {e}")),
        },
    };
    let renderer = match Renderer::new(config.clone()) {
        Ok(r) => r.with_default_certificate(default_certificate.clone()),
        Err(e) => return Verdict::deny(format!("HawserConfig templates: {e}")),
    };
    let rendered = match renderer.render(&store) {
        Ok(rendered) => rendered,
        Err(e) => return Verdict::deny(format!("the configuration would not render: {e}")),
    };
    let about = |object: &ObjectRef| subject.as_ref().is_none_or(|s| s == object);
    if let Some(rejected) = rendered
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Rejected && about(&d.object))
    {
        if let Some((secret, _)) = unread.filter(|(_, refusal)| rejected.message == *refusal) {
            return Verdict {
                allowed: true,
                reason: None,
                warnings: vec![format!(
                    "Secret {secret} (its basic-auth users) is read once an Ingress names it, so it was not checked here; if it does not exist or holds no valid \"auth\", the Ingress will be refused and its routes not served"
                )],
            };
        }
        return Verdict::deny(rejected.to_string());
    }
    let warnings: Vec<String> = rendered
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning && about(&d.object))
        .map(ToString::to_string)
        .collect();

    // Overrides are named after the candidate's, trust stays the controller's.
    let policy = policy.name_culprits(
        culprit_at,
        config.templates.overrides.keys().cloned().collect(),
    );
    if let Err(refused) = gate::check_policy(&policy, &rendered.files) {
        return Verdict::deny(refused.to_string());
    }
    if let Some(haproxy) = haproxy {
        let checked = gate::check(haproxy, &policy, &rendered.files);
        match tokio::time::timeout(REVIEW_DEADLINE, checked).await {
            Ok(Ok(_)) => {}
            Ok(Err(GateError::Rejected {
                output,
                line,
                culprit,
            })) => {
                // HAProxy's words, reduced so that no file content is echoed.
                let checked = rendered.files.text(CONFIG_PATH).unwrap_or_default();
                return Verdict::deny(reason::haproxy_rejection(
                    line,
                    culprit.as_deref(),
                    &output,
                    checked,
                ));
            }
            Ok(Err(e @ (GateError::Unrunnable { .. } | GateError::Refused(_)))) => {
                return Verdict::deny(e.to_string());
            }
            Ok(Err(e)) => {
                // The check itself could not run: admit, and say so.
                let mut verdict = Verdict {
                    allowed: true,
                    reason: None,
                    warnings,
                };
                verdict
                    .warnings
                    .push(format!("not checked with haproxy -c: {e}"));
                return verdict;
            }
            Err(_) => {
                let mut verdict = Verdict {
                    allowed: true,
                    reason: None,
                    warnings,
                };
                verdict.warnings.push(format!(
                    "haproxy -c took longer than {REVIEW_DEADLINE:?}; not checked"
                ));
                return verdict;
            }
        }
    }
    Verdict {
        allowed: true,
        reason: None,
        warnings,
    }
}
