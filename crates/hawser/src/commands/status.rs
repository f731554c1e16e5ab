//! `hawser status`: the Gateway API status a manifests directory gives, as a
//! person reads it or as the status stanzas the controller writes.
//!
//! ```text
//!  --manifests DIR + --config FILE ──► Store ──gateway_routing──► GatewayStatus ─┐
//!                                        └──────render (Ingress) ──► diagnostics ─┼─► text | json
//! ```

mod hint;
mod json;
mod text;

use std::io::Write as _;
use std::process::ExitCode;

use hawser_controller::quarantine::{Judge, QuarantineError, render_checked};
use hawser_haproxy::HaproxyBinary;
use hawser_model::{Kind, ObjectKey, ObjectRef, Store};
use hawser_render::features::effective_features;
use hawser_render::{Diagnostic, GatewayRouting, Rendered, Settings, Severity, gateway_routing};

use super::input;
use crate::cli::{StatusArgs, StatusOutput};

/// What becomes of one Ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngressState {
    Served,
    Ignored,
    Rejected,
}

impl IngressState {
    pub fn as_str(self) -> &'static str {
        match self {
            IngressState::Served => "served",
            IngressState::Ignored => "ignored",
            IngressState::Rejected => "rejected",
        }
    }
}

/// One Ingress and, unless served, why not; served, what it asks of its
/// routes (docs/annotations.md).
#[derive(Debug)]
pub struct IngressOutcome {
    pub key: ObjectKey,
    pub state: IngressState,
    pub why: Option<String>,
    pub features: Vec<String>,
}

/// Everything a status report shows.
pub struct Report<'a> {
    /// What the report is about (hints look at the objects themselves).
    pub store: &'a Store,
    pub controller: String,
    pub routing: GatewayRouting,
    pub ingresses: Vec<IngressOutcome>,
    /// Objects left out because HAProxy refuses what they produce (only
    /// known when HAProxy is installed).
    pub quarantined: Vec<Diagnostic>,
}

impl Report<'_> {
    /// Gateway API objects the status does not cover (not ours, or naming
    /// no Gateway of ours), with what the routing said about them.
    pub fn unhandled(&self) -> Vec<&Diagnostic> {
        let status = &self.routing.status;
        let covered = |object: &ObjectRef| match object.kind {
            Kind::GatewayClass => status.classes.iter().any(|c| c.name == object.key.name),
            Kind::Gateway => status.gateways.iter().any(|g| g.gateway == object.key),
            _ => status.routes.iter().any(|r| &r.route == object),
        };
        self.routing
            .diagnostics
            .iter()
            .filter(|d| d.severity != Severity::Warning && !covered(&d.object))
            .collect()
    }
}

pub async fn run(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let inputs = input::load(&args.input)?;
    let store = &inputs.manifests.store;
    let rendered = checked_render(&inputs).await?;
    let controller = inputs.renderer.config().settings.gateway_controller.clone();
    let mut routing = gateway_routing(store, &controller);
    // The render's status also knows the listeners whose port this
    // configuration cannot serve.
    routing.status = (*rendered.gateway_status).clone();
    let report = Report {
        store,
        controller: controller.clone(),
        routing,
        ingresses: ingress_outcomes(
            store,
            &rendered.diagnostics,
            &inputs.renderer.config().settings,
        ),
        quarantined: rendered
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Rejected && d.message.starts_with("quarantined: "))
            .cloned()
            .collect(),
    };
    let out = match args.output {
        StatusOutput::Text => text::report(&report),
        StatusOutput::Json => format!("{:#}\n", json::report(&report)),
    };
    // A reader that stops early (`| head`) is not an error.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write the status report"))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Each Ingress's fate in a render: the first rejection or ignore names why.
/// The render, judged by HAProxy when one is installed: what it would
/// quarantine is then reported as rejected, and a quarantined route's
/// parents do not accept it (as `run` and the controller would serve it).
async fn checked_render(inputs: &input::Inputs) -> anyhow::Result<Rendered> {
    let store = &inputs.manifests.store;
    let Ok(haproxy) = HaproxyBinary::locate() else {
        return Ok(inputs.renderer.render(store)?);
    };
    let judge = Judge::gate(haproxy, inputs.policy.clone());
    match render_checked(&inputs.renderer, store, None, &[], &judge, |_| false).await {
        Ok(checked) => Ok(checked.rendered),
        Err(QuarantineError::Render(e)) => Err(e.into()),
        Err(refused) => {
            eprintln!("note: {refused}");
            Ok(inputs.renderer.render(store)?)
        }
    }
}

fn ingress_outcomes(
    store: &Store,
    diagnostics: &[Diagnostic],
    settings: &Settings,
) -> Vec<IngressOutcome> {
    store
        .ingresses()
        .map(|ingress| {
            let object = ObjectRef::new(Kind::Ingress, ingress.key.clone());
            let verdict = [Severity::Rejected, Severity::Ignored]
                .into_iter()
                .find_map(|severity| {
                    diagnostics
                        .iter()
                        .find(|d| d.severity == severity && d.object == object)
                        .map(|d| (severity, d.message.clone()))
                });
            let (state, why) = match verdict {
                Some((Severity::Rejected, why)) => (IngressState::Rejected, Some(why)),
                Some((_, why)) => (IngressState::Ignored, Some(why)),
                None => (IngressState::Served, None),
            };
            let features = match state {
                IngressState::Served => effective_features(ingress, settings)
                    .map(|(f, _)| f.describe())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            IngressOutcome {
                key: ingress.key.clone(),
                state,
                why,
                features,
            }
        })
        .collect()
}
