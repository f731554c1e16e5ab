//! The kinds a HawserConfig adds (`spec.watch.extraResources`): found
//! through the API's discovery, watched untyped, kept as trimmed JSON, and
//! handed to templates as `resources.<Kind>`.
//!
//! ```text
//!  ExtraResource ──discovery (plural, scope)──► watcher per namespace ──► ExtraChange
//!   (apiVersion, kind,                           (retried with backoff;          │
//!    namespaces, labels)                          an unknown kind is reported)   ▼
//!                                                                ExtraObjects ──► Store.extra
//! ```
//!
//! Nothing renders until each of these watches has listed, as for the
//! built-in kinds: templates that read them would otherwise render half. A
//! kind the API server does not serve (a typo, a CRD not installed yet) is
//! reported in `/status` and the log and holds no objects; it never stops
//! the rest from rendering, and discovery is asked again until it answers.

use std::collections::BTreeMap;
use std::time::Duration;

use ::kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use ::kube::runtime::WatchStreamExt as _;
use ::kube::runtime::watcher::{self, Event, watcher};
use ::kube::{Api, Client, discovery};
use hawser_crd::ExtraResource;
use hawser_model::{ObjectKey, Store};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_stream::StreamExt as _;
use tracing::warn;

use super::WatchStatus;
use super::watch::trim;

/// How long to wait before asking discovery again about a kind it did not know.
const DISCOVERY_RETRY: Duration = Duration::from_secs(5);

/// A watcher event of an extra kind, as JSON.
#[derive(Debug)]
pub enum ExtraChange {
    Relist,
    Listed(ObjectKey, Value),
    ListDone,
    Applied(ObjectKey, Value),
    Deleted(ObjectKey),
    Failed(String),
    /// Discovery does not know the kind: it has no objects (and the source
    /// renders without it) until discovery finds it.
    Unknown(String),
}

/// One extra kind in one namespace (or all), and what it holds.
#[derive(Debug, Default)]
struct ExtraWatch {
    kind: String,
    /// How `/status` names it (`extra Widget`, `extra Widget app`).
    name: String,
    objects: BTreeMap<ObjectKey, Value>,
    relist: Option<BTreeMap<ObjectKey, Value>>,
    status: WatchStatus,
}

/// Every extra watch of one set of options.
#[derive(Debug, Default)]
pub struct ExtraObjects {
    watches: Vec<ExtraWatch>,
}

impl ExtraObjects {
    /// Starts one watch per extra kind and namespace; their changes arrive
    /// on `messages`, tagged with the watch's index.
    pub fn start(
        tasks: &mut JoinSet<()>,
        client: &Client,
        extras: &[ExtraResource],
        messages: &mpsc::UnboundedSender<(usize, ExtraChange)>,
    ) -> ExtraObjects {
        let mut watches = Vec::new();
        for extra in extras {
            let namespaces: Vec<Option<String>> = if extra.namespaces.is_empty() {
                vec![None]
            } else {
                extra.namespaces.iter().cloned().map(Some).collect()
            };
            for namespace in namespaces {
                let index = watches.len();
                let name = match &namespace {
                    Some(ns) => format!("extra {} {ns}", extra.kind),
                    None => format!("extra {}", extra.kind),
                };
                tasks.spawn(follow(
                    client.clone(),
                    extra.clone(),
                    namespace,
                    index,
                    messages.clone(),
                ));
                watches.push(ExtraWatch {
                    kind: extra.kind.clone(),
                    name,
                    ..ExtraWatch::default()
                });
            }
        }
        ExtraObjects { watches }
    }

    /// Every watch has listed once.
    pub fn ready(&self) -> bool {
        self.watches.iter().all(|w| w.status.synced)
    }

    /// Applies one change; whether the objects changed.
    pub fn apply(&mut self, index: usize, change: ExtraChange) -> bool {
        let Some(watch) = self.watches.get_mut(index) else {
            return false;
        };
        match change {
            ExtraChange::Relist => {
                watch.relist = Some(BTreeMap::new());
                watch.status.lists += 1;
                false
            }
            ExtraChange::Listed(key, value) => {
                watch.relist.get_or_insert_default().insert(key, value);
                false
            }
            ExtraChange::ListDone => {
                let listed = watch.relist.take().unwrap_or_default();
                let changed = !watch.status.synced || listed != watch.objects;
                watch.objects = listed;
                watch.status.synced = true;
                watch.status.last_error = None;
                changed
            }
            ExtraChange::Applied(key, value) => {
                watch.objects.insert(key, value.clone()) != Some(value)
            }
            ExtraChange::Deleted(key) => watch.objects.remove(&key).is_some(),
            ExtraChange::Failed(error) => {
                watch.status.errors += 1;
                watch.status.last_error = Some(error);
                false
            }
            ExtraChange::Unknown(error) => {
                let first = !watch.status.synced;
                watch.status.synced = true;
                watch.status.errors += 1;
                watch.status.last_error = Some(error);
                first
            }
        }
    }

    /// Puts every extra kind's objects into `store` (a kind with none is
    /// there, empty, so templates can loop over it).
    pub fn fill(&self, store: &mut Store) {
        let mut by_kind: BTreeMap<&str, BTreeMap<ObjectKey, Value>> = BTreeMap::new();
        for watch in &self.watches {
            by_kind.entry(&watch.kind).or_default().extend(
                watch
                    .objects
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone())),
            );
        }
        for (kind, objects) in by_kind {
            store.extra.replace(kind, objects);
        }
    }

    pub fn report(&self, watches: &mut BTreeMap<String, WatchStatus>) {
        for watch in &self.watches {
            watches.insert(watch.name.clone(), watch.status.clone());
        }
    }
}

/// Finds the kind through discovery (until it is found), then follows it
/// until the source stops.
async fn follow(
    client: Client,
    extra: ExtraResource,
    namespace: Option<String>,
    index: usize,
    messages: mpsc::UnboundedSender<(usize, ExtraChange)>,
) {
    let send = |change| messages.send((index, change)).is_ok();
    let resource = loop {
        match resource_of(&client, &extra).await {
            Ok(resource) => break resource,
            Err(error) => {
                warn!("{error}; asking again in {} s", DISCOVERY_RETRY.as_secs());
                if !send(ExtraChange::Unknown(error)) {
                    return;
                }
                tokio::time::sleep(DISCOVERY_RETRY).await;
            }
        }
    };
    let api: Api<DynamicObject> = match (&namespace, resource.1) {
        (Some(ns), true) => Api::namespaced_with(client, ns, &resource.0),
        _ => Api::all_with(client, &resource.0),
    };
    let mut config = watcher::Config::default();
    if let Some(labels) = &extra.label_selector {
        config = config.labels(labels);
    }
    let events = watcher(api, config).default_backoff();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let change = match event {
            Ok(Event::Init) => ExtraChange::Relist,
            Ok(Event::InitApply(object)) => {
                let (key, value) = kept(object);
                ExtraChange::Listed(key, value)
            }
            Ok(Event::InitDone) => ExtraChange::ListDone,
            Ok(Event::Apply(object)) => {
                let (key, value) = kept(object);
                ExtraChange::Applied(key, value)
            }
            Ok(Event::Delete(object)) => ExtraChange::Deleted(key_of(&object)),
            Err(error) => ExtraChange::Failed(error.to_string()),
        };
        if !send(change) {
            return;
        }
    }
}

/// The API resource of an extra kind, and whether it is namespaced.
async fn resource_of(
    client: &Client,
    extra: &ExtraResource,
) -> Result<(ApiResource, bool), String> {
    let (group, version) = match extra.api_version.rsplit_once('/') {
        Some((group, version)) => (group, version),
        None => ("", extra.api_version.as_str()),
    };
    let gvk = GroupVersionKind::gvk(group, version, &extra.kind);
    let (resource, capabilities) = discovery::pinned_kind(client, &gvk).await.map_err(|e| {
        format!(
            "extraResources: the API server does not serve {} {}: {e}",
            extra.api_version, extra.kind
        )
    })?;
    Ok((resource, capabilities.scope == discovery::Scope::Namespaced))
}

fn key_of(object: &DynamicObject) -> ObjectKey {
    ObjectKey::new(
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

/// The object as templates see it: trimmed, as JSON.
fn kept(mut object: DynamicObject) -> (ObjectKey, Value) {
    trim(&mut object.metadata);
    let key = key_of(&object);
    let value = serde_json::to_value(&object).unwrap_or(Value::Null);
    (key, value)
}
