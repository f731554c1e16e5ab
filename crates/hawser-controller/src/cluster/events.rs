//! Kubernetes Events on the objects a render rejects, so `kubectl describe
//! ingress` says why hawser does not serve it, on the Secrets served as
//! certificates with a warning (expired, not yet valid, not for a host,
//! without its intermediate) and the objects naming them, and on the Gateway API
//! objects whose status refuses something (a listener or a route parent not
//! accepted, or with references that do not resolve), naming the
//! condition's reason. Written by the leader only, once per rejection (not
//! on every render); kube's recorder folds repeats into an event series.

use std::collections::BTreeSet;
use std::sync::Arc;

use ::kube::Client;
use ::kube::runtime::events::{Event, EventType, Recorder, Reporter};
use hawser_model::{Kind, ObjectKey, ObjectRef};
use k8s_openapi::api::core::v1::ObjectReference;
use tokio::sync::watch;
use tracing::debug;

use crate::fleet::{RenderedStore, Snapshot};
use crate::gateway_status::refused_conditions;

/// The longest note an Event carries (the API server refuses more).
const NOTE_LIMIT: usize = 1000;

/// Publishes an Event for every new rejection (reason `Rejected`) and every
/// new warning about a served certificate (its reason, such as
/// `CertificateExpired`) while `leading` is `Some`, until `stop` resolves.
/// `instance` names this controller (the pod).
pub async fn report_rejections(
    client: Client,
    instance: String,
    mut snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    mut leading: watch::Receiver<Option<u64>>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let recorder = Recorder::new(
        client,
        Reporter {
            controller: "hawser.dev/ingress-controller".to_string(),
            instance: Some(instance),
        },
    );
    let mut reported: BTreeSet<(ObjectRef, &'static str, String)> = BTreeSet::new();
    loop {
        let snapshot = snapshots.borrow_and_update().clone();
        let leads = leading.borrow_and_update().is_some();
        match snapshot {
            Some(snapshot) if leads => {
                let now = reportable(&snapshot);
                for (object, reason, message) in now.difference(&reported) {
                    publish(&recorder, object, reason, message).await;
                }
                reported = now;
            }
            // A new leader reports what is rejected when it takes over.
            _ => reported.clear(),
        }
        tokio::select! {
            () = &mut stop => return,
            changed = snapshots.changed() => if changed.is_err() { return },
            changed = leading.changed() => if changed.is_err() { return },
        }
    }
}

/// What a snapshot has Events for: its rejections, and the warnings about
/// its served certificates on each Secret and the objects naming it.
fn reportable(snapshot: &Snapshot) -> BTreeSet<(ObjectRef, &'static str, String)> {
    let rejected = snapshot
        .rejected
        .iter()
        .map(|(object, message)| (object.clone(), "Rejected", message.clone()));
    let certificates = snapshot
        .rendered
        .iter()
        .flat_map(|rendered| rendered.served_certificates.values());
    let warned = certificates.flat_map(|certificate| {
        let secret = ObjectRef::new(
            Kind::Secret,
            ObjectKey::new(&certificate.namespace, &certificate.name),
        );
        let objects: Vec<ObjectRef> = std::iter::once(secret)
            .chain(certificate.referrers.iter().cloned())
            .collect();
        certificate.warnings.iter().flat_map(move |warning| {
            objects
                .clone()
                .into_iter()
                .map(|object| (object, warning.reason, warning.message.clone()))
        })
    });
    rejected.chain(warned).collect()
}

/// Publishes an Event for every new refusal in the Gateway API status of
/// the newest rendered store while `leading` is `Some`, until `stop`
/// resolves. They are reported as the configured Gateway controller.
pub async fn report_gateway_refusals(
    client: Client,
    instance: String,
    mut stores: watch::Receiver<Option<RenderedStore>>,
    mut leading: watch::Receiver<Option<u64>>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut recorder: Option<(String, Recorder)> = None;
    let mut reported: BTreeSet<(ObjectRef, &'static str, String)> = BTreeSet::new();
    loop {
        let store = stores.borrow_and_update().clone();
        let leads = leading.borrow_and_update().is_some();
        match store {
            Some(store) if leads => {
                let controller = &store.config.settings.gateway_controller;
                if recorder.as_ref().is_none_or(|(name, _)| name != controller) {
                    let reporter = Reporter {
                        controller: controller.clone(),
                        instance: Some(instance.clone()),
                    };
                    recorder = Some((controller.clone(), Recorder::new(client.clone(), reporter)));
                }
                let now: BTreeSet<(ObjectRef, &'static str, String)> =
                    refused_conditions(&store.gateway_status)
                        .into_iter()
                        .map(|r| (r.object, r.reason, r.note))
                        .collect();
                if let Some((_, recorder)) = &recorder {
                    for (object, reason, note) in now.difference(&reported) {
                        publish(recorder, object, reason, note).await;
                    }
                }
                reported = now;
            }
            // A new leader reports what is refused when it takes over.
            _ => reported.clear(),
        }
        tokio::select! {
            () = &mut stop => return,
            changed = stores.changed() => if changed.is_err() { return },
            changed = leading.changed() => if changed.is_err() { return },
        }
    }
}

async fn publish(recorder: &Recorder, object: &ObjectRef, reason: &str, message: &str) {
    let mut note: String = message.chars().take(NOTE_LIMIT).collect();
    if note.len() < message.len() {
        note.push('…');
    }
    let event = Event {
        type_: EventType::Warning,
        reason: reason.to_string(),
        note: Some(note),
        action: "Render".to_string(),
        secondary: None,
    };
    let reference = ObjectReference {
        api_version: Some(object.kind.api_version().to_string()),
        kind: Some(object.kind.as_str().to_string()),
        namespace: (!object.key.namespace.is_empty()).then(|| object.key.namespace.clone()),
        name: Some(object.key.name.clone()),
        ..ObjectReference::default()
    };
    if let Err(e) = recorder.publish(&event, &reference).await {
        debug!(object = %object.key, "cannot publish the rejection event: {e}");
    }
}
