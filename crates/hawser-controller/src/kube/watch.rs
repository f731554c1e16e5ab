//! One task per watch: kube's watcher over untyped objects, each converted
//! to a trimmed view (or a problem) before it leaves the task.
//!
//! The watchers read [`DynamicObject`]s and convert one object at a time, so
//! an object the typed structs cannot read is one problem, not a list that
//! fails for ever and stalls its whole kind.

use std::time::Duration;

use ::kube::api::{ApiResource, DynamicObject};
use ::kube::runtime::WatchStreamExt as _;
use ::kube::runtime::watcher::{self, Event, watcher};
use ::kube::{Api, Client, Resource};
use hawser_model::{
    EndpointSlice, Ingress, IngressClass, Kind, Object, ObjectKey, ObjectRef, Secret, Service,
};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_stream::StreamExt as _;

use super::{KubeSourceOptions, LAST_APPLIED_ANNOTATION, Scope};

/// The Secrets hawser reads: those an Ingress's `tls` can name.
pub const TLS_SECRET_FIELD_SELECTOR: &str = "type=kubernetes.io/tls";

/// How long a Secret read may take before it counts as failed.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// What a watch task or a Secret read reports to the source loop.
#[derive(Debug)]
pub enum Message {
    Watch(Scope, Change),
    /// A Secret read because an Ingress started to refer to it.
    Fetched {
        key: ObjectKey,
        result: Result<Option<Secret>, String>,
    },
}

/// A watcher event, converted.
#[derive(Debug)]
pub enum Change {
    /// A (re)list starts: what follows replaces the scope once it is done.
    Relist,
    Listed(Item),
    ListDone,
    Applied(Item),
    Deleted(ObjectRef),
    Failed(String),
}

/// One object as the source keeps it, or why it cannot.
#[derive(Debug)]
pub enum Item {
    Object(Object),
    Malformed { object: ObjectRef, reason: String },
}

/// Starts one watch per kind and namespace; returns the scopes watched.
pub fn spawn_all(
    tasks: &mut JoinSet<()>,
    client: &Client,
    options: &KubeSourceOptions,
    messages: &mpsc::UnboundedSender<Message>,
) -> Vec<Scope> {
    let kinds = [
        (
            Kind::Ingress,
            ApiResource::erase::<networking::Ingress>(&()),
        ),
        (
            Kind::IngressClass,
            ApiResource::erase::<networking::IngressClass>(&()),
        ),
        (Kind::Service, ApiResource::erase::<core::Service>(&())),
        (
            Kind::EndpointSlice,
            ApiResource::erase::<discovery::EndpointSlice>(&()),
        ),
        (Kind::Secret, ApiResource::erase::<core::Secret>(&())),
    ];
    let mut scopes = Vec::new();
    for (kind, resource) in kinds {
        let mut config = watcher::Config::default();
        if let Some(labels) = options.label_selectors.get(&kind) {
            config = config.labels(labels);
        }
        if kind == Kind::Secret {
            config = config.fields(TLS_SECRET_FIELD_SELECTOR);
        }
        let namespaces: Vec<Option<String>> =
            if kind == Kind::IngressClass || options.namespaces.is_empty() {
                vec![None]
            } else {
                options.namespaces.iter().cloned().map(Some).collect()
            };
        for namespace in namespaces {
            let scope = Scope { kind, namespace };
            let api = match &scope.namespace {
                Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            tasks.spawn(follow(api, config.clone(), scope.clone(), messages.clone()));
            scopes.push(scope);
        }
    }
    scopes
}

/// Follows one watch until the source stops (the receiver is dropped).
async fn follow(
    api: Api<DynamicObject>,
    config: watcher::Config,
    scope: Scope,
    messages: mpsc::UnboundedSender<Message>,
) {
    let events = watcher(api, config).default_backoff();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let change = match event {
            Ok(Event::Init) => Change::Relist,
            Ok(Event::InitApply(object)) => Change::Listed(convert(scope.kind, object)),
            Ok(Event::InitDone) => Change::ListDone,
            Ok(Event::Apply(object)) => Change::Applied(convert(scope.kind, object)),
            Ok(Event::Delete(object)) => Change::Deleted(ObjectRef::new(
                scope.kind,
                key_of(scope.kind, &object.metadata),
            )),
            Err(error) => Change::Failed(error.to_string()),
        };
        if messages
            .send(Message::Watch(scope.clone(), change))
            .is_err()
        {
            return;
        }
    }
}

/// Reads one Secret (an Ingress started to refer to it) and reports it.
pub async fn fetch_secret(
    client: Client,
    key: ObjectKey,
    messages: mpsc::UnboundedSender<Message>,
) {
    let api: Api<core::Secret> = Api::namespaced(client, &key.namespace);
    let result = match tokio::time::timeout(FETCH_TIMEOUT, api.get_opt(&key.name)).await {
        Err(_) => Err(format!("no answer in {} s", FETCH_TIMEOUT.as_secs())),
        Ok(Err(error)) => Err(error.to_string()),
        Ok(Ok(None)) => Ok(None),
        Ok(Ok(Some(mut secret))) => {
            trim(&mut secret.metadata);
            Secret::from_k8s(&secret)
                .map(Some)
                .map_err(|e| e.to_string())
        }
    };
    let _ = messages.send(Message::Fetched { key, result });
}

/// The object's key as the model names it (cluster-scoped kinds have none).
fn key_of(kind: Kind, meta: &ObjectMeta) -> ObjectKey {
    let name = meta.name.clone().unwrap_or_default();
    if kind.is_cluster_scoped() {
        ObjectKey::cluster(name)
    } else {
        ObjectKey::new(meta.namespace.clone().unwrap_or_default(), name)
    }
}

/// Drops what is never worth keeping, before anything else looks at it.
pub fn trim(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// An untyped object → the model's view of it, or the reason it has none.
pub fn convert(kind: Kind, object: DynamicObject) -> Item {
    let DynamicObject {
        mut metadata, data, ..
    } = object;
    let object_ref = ObjectRef::new(kind, key_of(kind, &metadata));
    trim(&mut metadata);
    let converted = match kind {
        Kind::Ingress => typed::<networking::Ingress>(data, metadata)
            .and_then(|o| Ingress::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::Ingress),
        Kind::IngressClass => typed::<networking::IngressClass>(data, metadata)
            .and_then(|o| IngressClass::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::IngressClass),
        Kind::Service => typed::<core::Service>(data, metadata)
            .and_then(|o| Service::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::Service),
        Kind::EndpointSlice => typed::<discovery::EndpointSlice>(data, metadata)
            .and_then(|o| EndpointSlice::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::EndpointSlice),
        Kind::Secret => typed::<core::Secret>(data, metadata)
            .and_then(|o| Secret::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::Secret),
        // Not watched yet: the Gateway API watchers come with the status writer.
        Kind::Namespace
        | Kind::GatewayClass
        | Kind::Gateway
        | Kind::HttpRoute
        | Kind::GrpcRoute
        | Kind::TlsRoute
        | Kind::TcpRoute
        | Kind::ReferenceGrant => Err(format!("{kind} objects are not read from the cluster yet")),
    };
    match converted {
        Ok(object) => Item::Object(object),
        Err(reason) => Item::Malformed {
            object: object_ref,
            reason,
        },
    }
}

/// Reads the fields beside `metadata` as `K`, then puts the (trimmed)
/// metadata in: the metadata is never serialized again.
fn typed<K>(data: serde_json::Value, metadata: ObjectMeta) -> Result<K, String>
where
    K: Resource + DeserializeOwned,
{
    let mut object: K = serde_json::from_value(data).map_err(|e| format!("cannot read it: {e}"))?;
    *object.meta_mut() = metadata;
    Ok(object)
}
