//! Kubernetes Events on the objects a render rejects, so `kubectl describe
//! ingress` says why hawser does not serve it. Written by the leader only,
//! once per rejection (not on every render); kube's recorder folds repeats
//! into an event series.

use std::collections::BTreeSet;
use std::sync::Arc;

use ::kube::Client;
use ::kube::runtime::events::{Event, EventType, Recorder, Reporter};
use hawser_model::ObjectRef;
use k8s_openapi::api::core::v1::ObjectReference;
use tokio::sync::watch;
use tracing::debug;

use crate::fleet::Snapshot;

/// The longest note an Event carries (the API server refuses more).
const NOTE_LIMIT: usize = 1000;

/// Publishes an Event for every new rejection while `leading` is `Some`,
/// until `stop` resolves. `instance` names this controller (the pod).
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
    let mut reported: BTreeSet<(ObjectRef, String)> = BTreeSet::new();
    loop {
        let snapshot = snapshots.borrow_and_update().clone();
        let leads = leading.borrow_and_update().is_some();
        match snapshot {
            Some(snapshot) if leads => {
                let now: BTreeSet<(ObjectRef, String)> =
                    snapshot.rejected.iter().cloned().collect();
                for (object, message) in now.difference(&reported) {
                    publish(&recorder, object, message).await;
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

async fn publish(recorder: &Recorder, object: &ObjectRef, message: &str) {
    let mut note: String = message.chars().take(NOTE_LIMIT).collect();
    if note.len() < message.len() {
        note.push('…');
    }
    let event = Event {
        type_: EventType::Warning,
        reason: "Rejected".to_string(),
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
