//! One task per watch: kube's watcher over untyped objects, each converted
//! to a trimmed view (or a problem) before it leaves the task.
//!
//! The watchers read [`DynamicObject`]s and convert one object at a time, so
//! an object the typed structs cannot read is one problem, not a list that
//! fails for ever and stalls its whole kind.
//!
//! The Gateway API kinds (and Namespaces, which listeners' `allowedRoutes`
//! select) are optional: when the API server does not serve one (its CRD is
//! not installed) or may not be read, the watch reports
//! [`Change::Unavailable`], counts as listed-empty so that Ingresses keep
//! rendering, and keeps retrying, listing for real once the kind is served.

use std::time::Duration;

use ::kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use ::kube::runtime::WatchStreamExt as _;
use ::kube::runtime::watcher::{self, Event, watcher};
use ::kube::{Api, Client, Resource};
use gateway_api::experimental::tcproutes as tcp;
use gateway_api::{gatewayclasses, gateways, grpcroutes, httproutes, referencegrants, tlsroutes};
use hawser_k8s::FromK8s;
use hawser_model::{
    ConfigMap, EndpointSlice, Gateway, GatewayClass, GrpcRoute, HttpRoute, Ingress, IngressClass,
    Kind, Namespace, Object, ObjectKey, ObjectRef, ReferenceGrant, Secret, Service, TcpRoute,
    TlsRoute,
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

/// The Secrets hawser reads: TLS Secrets an Ingress's `tls` can name, and
/// the htpasswd Secrets of basic authentication (any other type), but not
/// Helm's release records or service-account tokens, which are large and
/// never named. Conversion keeps `tls.crt`, `tls.key` and `auth` only.
pub const SECRET_FIELD_SELECTOR: &str =
    "type!=helm.sh/release.v1,type!=kubernetes.io/service-account-token";

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
    /// An optional kind cannot be listed (not served, or forbidden): it
    /// holds no objects until it can.
    Unavailable(String),
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
        (Kind::Namespace, ApiResource::erase::<core::Namespace>(&())),
    ];
    let gateway_kinds = GATEWAY_API_KINDS
        .into_iter()
        .filter_map(|kind| Some((kind, gateway_api_resource(kind)?)));
    let mut scopes = Vec::new();
    for (kind, resource) in kinds.into_iter().chain(gateway_kinds) {
        let mut config = watcher::Config::default();
        if let Some(labels) = options.label_selectors.get(&kind) {
            config = config.labels(labels);
        }
        if kind == Kind::Secret {
            config = config.fields(SECRET_FIELD_SELECTOR);
        }
        let namespaces: Vec<Option<String>> =
            if kind.is_cluster_scoped() || options.namespaces.is_empty() {
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
    // The ConfigMaps a setting names (the TCP services map): each alone.
    for key in &options.config_maps {
        let scope = Scope {
            kind: Kind::ConfigMap,
            namespace: Some(key.namespace.clone()),
        };
        let resource = ApiResource::erase::<core::ConfigMap>(&());
        let api = Api::namespaced_with(client.clone(), &key.namespace, &resource);
        let config = watcher::Config::default().fields(&format!("metadata.name={}", key.name));
        tasks.spawn(follow(api, config, scope.clone(), messages.clone()));
        scopes.push(scope);
    }
    scopes
}

/// The Gateway API kinds watched, each at the version [`Kind::api_version`] names.
pub const GATEWAY_API_KINDS: [Kind; 7] = [
    Kind::GatewayClass,
    Kind::Gateway,
    Kind::HttpRoute,
    Kind::GrpcRoute,
    Kind::TlsRoute,
    Kind::TcpRoute,
    Kind::ReferenceGrant,
];

/// The API resource of a Gateway API kind (`None` for the other kinds).
pub fn gateway_api_resource(kind: Kind) -> Option<ApiResource> {
    let plural = match kind {
        Kind::GatewayClass => "gatewayclasses",
        Kind::Gateway => "gateways",
        Kind::HttpRoute => "httproutes",
        Kind::GrpcRoute => "grpcroutes",
        Kind::TlsRoute => "tlsroutes",
        Kind::TcpRoute => "tcproutes",
        Kind::ReferenceGrant => "referencegrants",
        _ => return None,
    };
    let (group, version) = kind.api_version().split_once('/')?;
    let gvk = GroupVersionKind::gvk(group, version, kind.as_str());
    Some(ApiResource::from_gvk_with_plural(&gvk, plural))
}

/// Kinds hawser serves without: Ingresses render when they cannot be read.
fn is_optional(kind: Kind) -> bool {
    kind == Kind::Namespace || GATEWAY_API_KINDS.contains(&kind)
}

/// Why an optional kind cannot be listed, if that is what `error` says: the
/// API server does not serve it (404) or refuses this controller (403).
fn unavailable(kind: Kind, error: &watcher::Error) -> Option<String> {
    let (watcher::Error::InitialListFailed(::kube::Error::Api(status))
    | watcher::Error::WatchStartFailed(::kube::Error::Api(status))) = error
    else {
        return None;
    };
    match status.code {
        404 => Some(format!(
            "the API server does not serve {} {} (is its CRD installed?); watched as empty until it does",
            kind.api_version(),
            kind
        )),
        403 => Some(format!(
            "not allowed to list {kind} objects (the controller's ClusterRole needs get, list and watch on them); watched as empty until it is: {}",
            status.message
        )),
        _ => None,
    }
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
            Err(error) => match unavailable(scope.kind, &error).filter(|_| is_optional(scope.kind))
            {
                Some(why) => Change::Unavailable(why),
                None => Change::Failed(error.to_string()),
            },
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
        Kind::Namespace => typed::<core::Namespace>(data, metadata)
            .and_then(|o| Namespace::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::Namespace),
        Kind::ConfigMap => typed::<core::ConfigMap>(data, metadata)
            .and_then(|o| ConfigMap::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::ConfigMap),
        Kind::GatewayClass => typed::<gatewayclasses::GatewayClass>(data, metadata)
            .and_then(|o| GatewayClass::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::GatewayClass),
        Kind::Gateway => typed::<gateways::Gateway>(data, metadata)
            .and_then(|o| Gateway::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::Gateway),
        Kind::HttpRoute => typed::<httproutes::HttpRoute>(data, metadata)
            .and_then(|o| HttpRoute::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::HttpRoute),
        Kind::GrpcRoute => typed::<grpcroutes::GrpcRoute>(data, metadata)
            .and_then(|o| GrpcRoute::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::GrpcRoute),
        Kind::TlsRoute => typed::<tlsroutes::TlsRoute>(data, metadata)
            .and_then(|o| TlsRoute::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::TlsRoute),
        Kind::TcpRoute => typed::<tcp::TcpRoute>(data, metadata)
            .and_then(|o| TcpRoute::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::TcpRoute),
        Kind::ReferenceGrant => typed::<referencegrants::ReferenceGrant>(data, metadata)
            .and_then(|o| ReferenceGrant::from_k8s(&o).map_err(|e| e.to_string()))
            .map(Object::ReferenceGrant),
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
    let mut data = data;
    // The Gateway API types require the field the metadata goes into.
    if let Some(fields) = data.as_object_mut() {
        fields
            .entry("metadata")
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    }
    let mut object: K = serde_json::from_value(data).map_err(|e| format!("cannot read it: {e}"))?;
    *object.meta_mut() = metadata;
    Ok(object)
}
