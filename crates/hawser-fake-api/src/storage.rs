//! The objects, their history and the open watches: the API server's etcd
//! and watch cache in one.
//!
//! Every write takes the next resourceVersion from one global counter, is
//! recorded in the history, and is sent at once to every open watch that
//! selects the object. A watch from resourceVersion N replays the history
//! after N; once [`Storage::compact`] dropped that part, it gets `410 Gone`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;
use http::Method;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::body::Chunk;
use crate::merge::merge_patch;
use crate::route::Collection;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{self, ApiError};

/// One object's identity. Cluster-scoped objects have an empty namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ObjectId {
    pub collection: Collection,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One write, as watches replay it.
#[derive(Debug)]
struct Change {
    resource_version: u64,
    id: ObjectId,
    event: EventType,
    before: Option<Value>,
    after: Value,
}

/// What a watch selects.
#[derive(Debug, Clone)]
pub(crate) struct WatchSpec {
    pub collection: Collection,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub bookmarks: bool,
}

impl WatchSpec {
    fn selects(&self, id: &ObjectId, object: &Value) -> bool {
        id.collection == self.collection
            && self.namespace.as_ref().is_none_or(|ns| *ns == id.namespace)
            && self.labels.matches(&labels_of(object))
            && self.fields.matches(object)
    }

    /// The event this watch sees for a change, if any: an object that
    /// starts or stops matching is ADDED or DELETED, as the API server does.
    fn event_for(&self, change: &Change) -> Option<&'static str> {
        let before = change
            .before
            .as_ref()
            .is_some_and(|b| self.selects(&change.id, b));
        let after = self.selects(&change.id, &change.after);
        match (change.event, before, after) {
            (EventType::Added, _, true) | (EventType::Modified, false, true) => Some("ADDED"),
            (EventType::Modified, true, true) => Some("MODIFIED"),
            (EventType::Modified, true, false) => Some("DELETED"),
            (EventType::Deleted, b, a) if a || b => Some("DELETED"),
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Watch {
    id: u64,
    spec: WatchSpec,
    chunks: mpsc::UnboundedSender<Chunk>,
}

/// How a PATCH body is read. Strategic merge and server-side apply are
/// treated as JSON merge patches (good enough for the objects tests write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    Merge,
    Apply,
}

/// Where the resourceVersion counter starts: any number will do, but not 0,
/// which list and watch requests use to mean "any version".
const FIRST_RESOURCE_VERSION: u64 = 100;

#[derive(Debug)]
pub(crate) struct Storage {
    resource_version: u64,
    next_uid: u64,
    objects: BTreeMap<ObjectId, Value>,
    history: VecDeque<Change>,
    /// Watches from a resourceVersion below this one get 410 Gone.
    oldest: u64,
    kinds: BTreeMap<Collection, String>,
    /// Collections whose objects have a namespace (for discovery).
    namespaced: BTreeSet<Collection>,
    watches: Vec<Watch>,
    next_watch: u64,
    /// How many of the next watch requests fail with 500.
    pub failing_watches: u32,
    /// Resources answered with 404, as when their CRD is not installed.
    pub unserved: BTreeSet<Collection>,
    pub requests: Vec<(Method, String)>,
}

impl Default for Storage {
    fn default() -> Self {
        Storage {
            resource_version: FIRST_RESOURCE_VERSION,
            next_uid: 0,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            oldest: FIRST_RESOURCE_VERSION,
            kinds: BTreeMap::new(),
            namespaced: BTreeSet::new(),
            watches: Vec::new(),
            next_watch: 0,
            failing_watches: 0,
            unserved: BTreeSet::new(),
            requests: Vec::new(),
        }
    }
}

impl Storage {
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    pub fn get(&self, id: &ObjectId) -> Result<Value, ApiError> {
        self.objects
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&resource_name(&id.collection), &id.name))
    }

    /// A `List` document of the objects selected, in namespace/name order.
    pub fn list(
        &self,
        collection: &Collection,
        namespace: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
    ) -> Value {
        let items: Vec<Value> = self
            .objects
            .iter()
            .filter(|(id, object)| {
                id.collection == *collection
                    && namespace.is_none_or(|ns| ns == id.namespace)
                    && labels.matches(&labels_of(object))
                    && fields.matches(object)
            })
            .map(|(_, object)| object.clone())
            .collect();
        json!({
            "kind": format!("{}List", self.kind_of(collection)),
            "apiVersion": collection.group_version,
            "metadata": {"resourceVersion": self.resource_version.to_string()},
            "items": items,
        })
    }

    pub fn create(
        &mut self,
        collection: &Collection,
        namespace: Option<&str>,
        mut object: Value,
    ) -> Result<Value, ApiError> {
        let kind = match object.get("kind").and_then(Value::as_str) {
            Some(kind) if !kind.is_empty() => kind.to_string(),
            _ => self.kind_of(collection),
        };
        let body = object
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("the object is not a JSON object"))?;
        body.insert("kind".into(), json!(kind));
        body.insert("apiVersion".into(), json!(collection.group_version));
        let meta = metadata_mut(body);
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            let prefix = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if prefix.is_empty() {
                return Err(ApiError::bad_request("name or generateName is required"));
            }
            name = format!("{prefix}{:05x}", self.next_uid + 1);
            meta.insert("name".into(), json!(name));
        }
        let given_namespace = meta
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .map(str::to_string);
        match namespace {
            Some(ns) => {
                if given_namespace.as_deref().is_some_and(|given| given != ns) {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                meta.insert("namespace".into(), json!(ns));
            }
            None => {
                meta.remove("namespace");
            }
        }
        let id = ObjectId {
            collection: collection.clone(),
            namespace: namespace.unwrap_or_default().to_string(),
            name,
        };
        if self.objects.contains_key(&id) {
            return Err(ApiError::already_exists(
                &resource_name(collection),
                &id.name,
            ));
        }
        self.next_uid += 1;
        meta.insert("uid".into(), json!(uid(self.next_uid)));
        meta.insert("creationTimestamp".into(), now());
        meta.insert("generation".into(), json!(1));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        self.kinds.insert(collection.clone(), kind);
        if namespace.is_some() {
            self.namespaced.insert(collection.clone());
        }
        Ok(self.commit(id, EventType::Added, None, object))
    }

    /// PUT: the whole object (or its status), optionally fenced by
    /// `metadata.resourceVersion`.
    pub fn replace(
        &mut self,
        id: &ObjectId,
        object: Value,
        subresource: Option<&str>,
    ) -> Result<Value, ApiError> {
        let old = self.get(id)?;
        check_precondition(id, &old, &object)?;
        let next = match subresource {
            None => object,
            Some("status") => {
                let mut next = old.clone();
                set_field(&mut next, "status", object.get("status").cloned());
                next
            }
            Some(other) => return Err(unknown_subresource(other)),
        };
        self.update(id, old, next, subresource.is_none())
    }

    /// Creates or replaces a whole object, status included, as one change
    /// (how tests set objects up, whatever their status subresource).
    pub fn put(
        &mut self,
        collection: &Collection,
        namespace: Option<&str>,
        object: Value,
    ) -> Result<Value, ApiError> {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = ObjectId {
            collection: collection.clone(),
            namespace: namespace.unwrap_or_default().to_string(),
            name: name.to_string(),
        };
        match self.objects.get(&id).cloned() {
            Some(old) => self.update(&id, old, object, false),
            None => self.create(collection, namespace, object),
        }
    }

    pub fn patch(
        &mut self,
        id: &ObjectId,
        patch: &Value,
        kind: PatchKind,
        subresource: Option<&str>,
    ) -> Result<Value, ApiError> {
        let old = match self.get(id) {
            Ok(old) => old,
            // Server-side apply creates what does not exist.
            Err(_) if kind == PatchKind::Apply && subresource.is_none() => {
                let namespace = (!id.namespace.is_empty()).then_some(id.namespace.as_str());
                let mut object = patch.clone();
                if let Some(body) = object.as_object_mut() {
                    metadata_mut(body).insert("name".into(), json!(id.name));
                }
                return self.create(&id.collection, namespace, object);
            }
            Err(e) => return Err(e),
        };
        check_precondition(id, &old, patch)?;
        let mut next = old.clone();
        match subresource {
            None => merge_patch(&mut next, patch),
            Some("status") => {
                if let Some(status) = patch.get("status") {
                    let mut merged = next.get("status").cloned().unwrap_or(Value::Null);
                    merge_patch(&mut merged, status);
                    set_field(&mut next, "status", Some(merged));
                }
            }
            Some(other) => return Err(unknown_subresource(other)),
        }
        self.update(id, old, next, subresource.is_none())
    }

    /// DELETE: gone at once, or marked for deletion while finalizers remain.
    pub fn delete(&mut self, id: &ObjectId) -> Result<Value, ApiError> {
        let old = self.get(id)?;
        let finalizers = old
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if finalizers {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(old);
            }
            let mut next = old.clone();
            if let Some(body) = next.as_object_mut() {
                metadata_mut(body).insert("deletionTimestamp".into(), now());
            }
            return Ok(self.commit(id.clone(), EventType::Modified, Some(old), next));
        }
        let uid = old.pointer("/metadata/uid").cloned().unwrap_or_default();
        self.commit(id.clone(), EventType::Deleted, Some(old.clone()), old);
        Ok(status::success(&id.name, &id.collection.plural, &uid))
    }

    /// Opens a watch from `resource_version` (`None`: from now, with the
    /// current objects as ADDED first). `initial_events` ends that first
    /// part with the `k8s.io/initial-events-end` bookmark (streaming lists).
    pub fn watch(
        &mut self,
        spec: WatchSpec,
        resource_version: Option<u64>,
        initial_events: bool,
    ) -> Result<(u64, mpsc::UnboundedReceiver<Chunk>), ApiError> {
        if self.failing_watches > 0 {
            self.failing_watches -= 1;
            return Err(ApiError::internal(
                "injected failure: the watch cannot start",
            ));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        match resource_version {
            Some(from) if !initial_events => {
                if from < self.oldest {
                    let gone = ApiError::gone(from, self.oldest);
                    let _ = tx.send(Ok(event_line("ERROR", &gone.to_status())));
                    // The stream ends after the error, as the API server's does.
                    return Ok((0, rx));
                }
                for change in self.history.iter().filter(|c| c.resource_version > from) {
                    if let Some(event) = spec.event_for(change) {
                        let _ = tx.send(Ok(event_line(event, &change.after)));
                    }
                }
            }
            _ => {
                for (id, object) in &self.objects {
                    if spec.selects(id, object) {
                        let _ = tx.send(Ok(event_line("ADDED", object)));
                    }
                }
                if initial_events {
                    let bookmark = self.bookmark(
                        &spec.collection,
                        json!({"k8s.io/initial-events-end": "true"}),
                    );
                    let _ = tx.send(Ok(bookmark));
                }
            }
        }
        self.next_watch += 1;
        let id = self.next_watch;
        self.watches.push(Watch {
            id,
            spec,
            chunks: tx,
        });
        Ok((id, rx))
    }

    /// Closes one watch (its timeout passed), with a bookmark first when it
    /// asked for them.
    pub fn end_watch(&mut self, id: u64) {
        if let Some(at) = self.watches.iter().position(|w| w.id == id) {
            let watch = self.watches.remove(at);
            if watch.spec.bookmarks {
                let _ = watch
                    .chunks
                    .send(Ok(self.bookmark(&watch.spec.collection, json!({}))));
            }
        }
    }

    /// Sends a BOOKMARK at the current resourceVersion to every watch that
    /// asked for bookmarks.
    pub fn send_bookmarks(&mut self) {
        let lines: Vec<Bytes> = self
            .watches
            .iter()
            .map(|w| self.bookmark(&w.spec.collection, json!({})))
            .collect();
        for (watch, line) in self.watches.iter().zip(lines) {
            if watch.spec.bookmarks {
                let _ = watch.chunks.send(Ok(line));
            }
        }
        self.watches.retain(|w| !w.chunks.is_closed());
    }

    /// Breaks every open watch stream with a read error.
    pub fn break_watches(&mut self) {
        for watch in self.watches.drain(..) {
            let _ = watch.chunks.send(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "injected failure: the watch stream broke",
            )));
        }
    }

    /// Forgets the history: a watch from any older resourceVersion gets 410.
    pub fn compact(&mut self) {
        self.history.clear();
        self.oldest = self.resource_version;
    }

    pub fn open_watches(&self) -> usize {
        self.watches
            .iter()
            .filter(|w| !w.chunks.is_closed())
            .count()
    }

    /// Applies an update computed from `old`: keeps what clients cannot
    /// change, bumps `generation` on spec changes, skips no-op writes.
    fn update(
        &mut self,
        id: &ObjectId,
        old: Value,
        mut next: Value,
        keep_status: bool,
    ) -> Result<Value, ApiError> {
        if keep_status {
            // The status subresource owns status; the main resource keeps it.
            set_field(&mut next, "status", old.get("status").cloned());
        }
        let body = next
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("the object is not a JSON object"))?;
        for (field, value) in [
            ("kind", old.get("kind")),
            ("apiVersion", old.get("apiVersion")),
        ] {
            if let Some(value) = value {
                body.insert(field.into(), value.clone());
            }
        }
        let meta = metadata_mut(body);
        if meta
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| !name.is_empty() && name != id.name)
        {
            return Err(ApiError::bad_request(
                "the name of the object does not match the name on the URL",
            ));
        }
        for field in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "resourceVersion",
        ] {
            match old.pointer(&format!("/metadata/{field}")) {
                Some(value) => meta.insert(field.into(), value.clone()),
                None => meta.remove(field),
            };
        }
        if spec_of(&old) != spec_of(&next) {
            let generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if let Some(body) = next.as_object_mut() {
                metadata_mut(body).insert("generation".into(), json!(generation + 1));
            }
        }
        if next == old {
            return Ok(old);
        }
        let finalized = next.pointer("/metadata/deletionTimestamp").is_some()
            && next
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
        let event = if finalized {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        Ok(self.commit(id.clone(), event, Some(old), next))
    }

    /// Takes the next resourceVersion, stores (or removes) the object,
    /// records the change and sends it to the watches that select it.
    fn commit(
        &mut self,
        id: ObjectId,
        event: EventType,
        before: Option<Value>,
        mut after: Value,
    ) -> Value {
        self.resource_version += 1;
        if let Some(body) = after.as_object_mut() {
            metadata_mut(body).insert(
                "resourceVersion".into(),
                json!(self.resource_version.to_string()),
            );
        }
        if event == EventType::Deleted {
            self.objects.remove(&id);
        } else {
            self.objects.insert(id.clone(), after.clone());
        }
        let change = Change {
            resource_version: self.resource_version,
            id,
            event,
            before,
            after: after.clone(),
        };
        for watch in &self.watches {
            if let Some(event) = watch.spec.event_for(&change) {
                let _ = watch.chunks.send(Ok(event_line(event, &change.after)));
            }
        }
        self.watches.retain(|w| !w.chunks.is_closed());
        self.history.push_back(change);
        after
    }

    fn bookmark(&self, collection: &Collection, annotations: Value) -> Bytes {
        let object = json!({
            "kind": self.kind_of(collection),
            "apiVersion": collection.group_version,
            "metadata": {
                "resourceVersion": self.resource_version.to_string(),
                "annotations": annotations,
            },
        });
        event_line("BOOKMARK", &object)
    }

    /// Discovery (`GET /apis/{group}/{version}`, `/api/v1`): the kinds of
    /// the collections that have had objects, as an `APIResourceList`.
    pub fn api_resources(&self, group_version: &str) -> Option<Value> {
        let resources: Vec<Value> = self
            .kinds
            .iter()
            .filter(|(collection, _)| collection.group_version == group_version)
            .map(|(collection, kind)| {
                json!({
                    "name": collection.plural,
                    "singularName": kind.to_lowercase(),
                    "namespaced": self.namespaced.contains(collection),
                    "kind": kind,
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
                })
            })
            .collect();
        (!resources.is_empty()).then(|| {
            json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": group_version,
                "resources": resources,
            })
        })
    }

    /// The kind of a collection: learned from the objects created in it,
    /// else from a table of the common ones.
    fn kind_of(&self, collection: &Collection) -> String {
        if let Some(kind) = self.kinds.get(collection) {
            return kind.clone();
        }
        let kind = match collection.plural.as_str() {
            "pods" => "Pod",
            "services" => "Service",
            "secrets" => "Secret",
            "configmaps" => "ConfigMap",
            "namespaces" => "Namespace",
            "endpoints" => "Endpoints",
            "events" => "Event",
            "endpointslices" => "EndpointSlice",
            "ingresses" => "Ingress",
            "ingressclasses" => "IngressClass",
            "leases" => "Lease",
            "deployments" => "Deployment",
            "daemonsets" => "DaemonSet",
            "customresourcedefinitions" => "CustomResourceDefinition",
            other => other,
        };
        kind.to_string()
    }
}

fn check_precondition(id: &ObjectId, old: &Value, new: &Value) -> Result<(), ApiError> {
    let expected = new
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty());
    let current = old
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    match expected {
        Some(expected) if Some(expected) != current => {
            Err(ApiError::conflict(&resource_name(&id.collection), &id.name))
        }
        _ => Ok(()),
    }
}

fn unknown_subresource(name: &str) -> ApiError {
    ApiError::new(
        http::StatusCode::NOT_FOUND,
        "NotFound",
        format!("the server could not find the requested resource (subresource {name:?})"),
    )
}

/// `ingresses.networking.k8s.io`, or `secrets` for the core group.
fn resource_name(collection: &Collection) -> String {
    match collection.group_version.split_once('/') {
        Some((group, _)) => format!("{}.{group}", collection.plural),
        None => collection.plural.clone(),
    }
}

/// Everything but metadata and status: what `generation` counts changes of.
fn spec_of(object: &Value) -> Value {
    let mut spec = object.clone();
    if let Some(body) = spec.as_object_mut() {
        body.remove("metadata");
        body.remove("status");
    }
    spec
}

fn set_field(object: &mut Value, field: &str, value: Option<Value>) {
    if let Some(body) = object.as_object_mut() {
        match value {
            Some(value) => body.insert(field.into(), value),
            None => body.remove(field),
        };
    }
}

fn metadata_mut(body: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let meta = body
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(map) => map,
        _ => unreachable!("metadata was made an object above"),
    }
}

pub(crate) fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn event_line(event: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": event, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

fn uid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

fn now() -> Value {
    serde_json::to_value(Time(k8s_openapi::jiff::Timestamp::now())).unwrap_or(Value::Null)
}
