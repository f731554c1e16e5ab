//! An in-memory Kubernetes API server for tests.
//!
//! The real kube-rs [`Client`], `Api<K>`, watchers and reflectors run against
//! it: the client is built on a `tower-test` mock service, and a task answers
//! every request it sends with the REST semantics of the API server.
//!
//! ```text
//!  kube::Api<K> / watcher ──http::Request──► tower_test mock ──► FakeApi task
//!                                                                  │ list, get, create, replace,
//!                                                                  │ patch (merge / apply), delete,
//!                                                                  │ watch (NDJSON stream, stays open)
//!  kube::Client ◄──http::Response<FakeBody>───────────────────────┘
//!                              Storage: objects as JSON, one resourceVersion counter, history
//! ```
//!
//! What it does like the API server: `resourceVersion`, `uid`,
//! `creationTimestamp` and `generation` (bumped on spec changes); `409
//! AlreadyExists` on create and `409 Conflict` on a stale `resourceVersion`;
//! the status subresource (the main resource keeps status, `/status` changes
//! only status); finalizers (delete marks, the last finalizer removed
//! deletes); label and field selectors on list and watch; watch streams
//! from a resourceVersion (history replayed, then live), objects moving in
//! and out of a selector seen as ADDED/DELETED, bookmarks, `timeoutSeconds`,
//! streaming lists (`sendInitialEvents`), `410 Gone` once the history was
//! [compacted](FakeApi::compact).
//!
//! What it does not: admission, validation against schemas, JSON patch,
//! pagination (`limit` is ignored, as the API server does for
//! `resourceVersion=0` lists), owner-reference garbage collection.
//!
//! ```no_run
//! # async fn example() {
//! use hawser_fake_api::FakeApi;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let (fake, client) = FakeApi::start();
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! cm.metadata.namespace = Some("app".into());
//! fake.apply(&cm);
//! let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, "app");
//! assert!(api.get_opt("settings").await.unwrap().is_some());
//! # }
//! ```
//!
//! It must not depend on any other hawser crate: it is the API server, not
//! a part of hawser; only tests and benchmarks use it.

mod body;
mod merge;
mod route;
mod selector;
mod serve;
mod status;
mod storage;

use std::any::TypeId;
use std::sync::{Arc, Mutex};

use http::Method;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use body::FakeBody;

use route::Collection;
use serve::{Shared, lock};
use storage::{ObjectId, Storage};

/// The fake API server. Clones share one server; it serves until every
/// client made by [`FakeApi::start`] is dropped.
#[derive(Debug, Clone)]
pub struct FakeApi {
    shared: Shared,
}

impl FakeApi {
    /// Starts the server on the current tokio runtime and returns a client
    /// for it (default namespace `default`).
    pub fn start() -> (FakeApi, Client) {
        let (service, handle) = tower_test::mock::pair();
        let shared: Shared = Arc::new(Mutex::new(Storage::default()));
        tokio::spawn(serve::serve(Arc::clone(&shared), handle));
        (FakeApi { shared }, Client::new(service, "default"))
    }

    /// Starts the server on the current tokio runtime, answering HTTP on
    /// `127.0.0.1` (see [`FakeApi::kubeconfig`]): how a separate process,
    /// `hawser controller --kubernetes`, reaches it. Serves until the
    /// runtime ends.
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn start_http() -> (FakeApi, std::net::SocketAddr) {
        let (fake, _client) = FakeApi::start();
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(e) => panic!("fake api: cannot listen: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(addr) => addr,
            Err(e) => panic!("fake api: no local address: {e}"),
        };
        tokio::spawn(serve::serve_http(Arc::clone(&fake.shared), listener));
        (fake, addr)
    }

    /// A kubeconfig for a process to reach [`FakeApi::start_http`]'s server
    /// at `addr`, in namespace `namespace` by default.
    pub fn kubeconfig(addr: std::net::SocketAddr, namespace: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://{addr}\nusers:\n- name: fake\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: {namespace}\ncurrent-context: fake\n"
        )
    }

    /// Creates or replaces an object, status included, as one write (one
    /// watch event). The object's `resourceVersion` is ignored. A namespaced
    /// object without a namespace goes to `default`. Returns what is stored.
    ///
    /// # Panics
    /// When the object does not serialize or the server refuses it.
    pub fn apply<K>(&self, object: &K) -> K
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
        K::Scope: 'static,
    {
        let value = match serde_json::to_value(object) {
            Ok(value) => value,
            Err(e) => panic!("fake api: the {} does not serialize: {e}", K::kind(&())),
        };
        from_value(self.apply_value::<K>(value))
    }

    /// [`FakeApi::apply`] for any JSON, stored where objects of `K` live:
    /// how a test stores an object the typed struct cannot express (a
    /// malformed one).
    ///
    /// # Panics
    /// When the server refuses it.
    pub fn apply_value<K>(&self, mut object: Value) -> Value
    where
        K: Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        let namespace = namespace_of::<K>(
            object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        match lock(&self.shared).put(&collection::<K>(), namespace.as_deref(), object) {
            Ok(stored) => stored,
            Err(e) => panic!("fake api: cannot apply a {}: {}", K::kind(&()), e.message),
        }
    }

    /// [`FakeApi::apply`] for a kind no Rust type describes (a custom
    /// resource): stored in `resource`'s collection, namespaced when the
    /// object names a namespace. Discovery then lists the kind.
    ///
    /// # Panics
    /// When the server refuses it.
    pub fn apply_dynamic(&self, resource: &kube::api::ApiResource, mut object: Value) -> Value {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .map(str::to_string);
        let collection = Collection {
            group_version: resource.api_version.clone(),
            plural: resource.plural.clone(),
        };
        match lock(&self.shared).put(&collection, namespace.as_deref(), object) {
            Ok(stored) => stored,
            Err(e) => panic!("fake api: cannot apply a {}: {}", resource.kind, e.message),
        }
    }

    /// The stored object (`namespace` is ignored for cluster-scoped kinds).
    ///
    /// # Panics
    /// When the stored JSON does not deserialize as `K`.
    pub fn get<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
        K::Scope: 'static,
    {
        lock(&self.shared)
            .get(&object_id::<K>(namespace, name))
            .ok()
            .map(from_value)
    }

    /// The stored object of a kind the fake knows by its [`ApiResource`]
    /// (a custom resource), as JSON; `namespace` is `""` for a
    /// cluster-scoped one.
    ///
    /// [`ApiResource`]: kube::api::ApiResource
    pub fn get_dynamic(
        &self,
        resource: &kube::api::ApiResource,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let id = ObjectId {
            collection: Collection {
                group_version: resource.api_version.clone(),
                plural: resource.plural.clone(),
            },
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        lock(&self.shared).get(&id).ok()
    }

    /// Deletes an object as a client would (finalizers are honoured);
    /// whether it existed.
    pub fn delete<K>(&self, namespace: &str, name: &str) -> bool
    where
        K: Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        lock(&self.shared)
            .delete(&object_id::<K>(namespace, name))
            .is_ok()
    }

    /// The next watch request answers `500 Internal Server Error`.
    pub fn fail_next_watch(&self) {
        self.fail_next_watches(1);
    }

    /// The next `count` watch requests answer `500`.
    pub fn fail_next_watches(&self, count: u32) {
        lock(&self.shared).failing_watches += count;
    }

    /// Requests for this resource (`gateway.networking.k8s.io/v1`,
    /// `gateways`) answer `404 Not Found` from now on, as when its CRD is
    /// not installed.
    pub fn unserve(&self, group_version: &str, plural: &str) {
        lock(&self.shared).unserved.insert(Collection {
            group_version: group_version.to_string(),
            plural: plural.to_string(),
        });
    }

    /// Requests for this resource are answered again, as when its CRD is
    /// installed.
    pub fn serve(&self, group_version: &str, plural: &str) {
        lock(&self.shared).unserved.remove(&Collection {
            group_version: group_version.to_string(),
            plural: plural.to_string(),
        });
    }

    /// Every open watch stream breaks with a read error, as when the
    /// connection to the API server drops.
    pub fn break_watches(&self) {
        lock(&self.shared).break_watches();
    }

    /// Drops the history: a watch from any resourceVersion older than the
    /// current one gets an `ERROR` event with `410 Gone` (`Expired`).
    pub fn compact(&self) {
        lock(&self.shared).compact();
    }

    /// Sends a BOOKMARK at the current resourceVersion on every watch that
    /// allowed bookmarks.
    pub fn bookmark(&self) {
        lock(&self.shared).send_bookmarks();
    }

    /// The current (newest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        lock(&self.shared).resource_version()
    }

    /// Watch streams open now.
    pub fn open_watches(&self) -> usize {
        lock(&self.shared).open_watches()
    }

    /// Every request the clients sent, in order: method and path with query.
    pub fn requests(&self) -> Vec<(Method, String)> {
        lock(&self.shared).requests.clone()
    }

    /// Forgets the requests logged so far.
    pub fn clear_requests(&self) {
        lock(&self.shared).requests.clear();
    }
}

fn collection<K: Resource<DynamicType = ()>>() -> Collection {
    Collection {
        group_version: K::api_version(&()).into_owned(),
        plural: K::plural(&()).into_owned(),
    }
}

fn is_namespaced<K>() -> bool
where
    K: Resource,
    K::Scope: 'static,
{
    TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>()
}

/// The namespace an object of `K` lives in: none for cluster-scoped kinds,
/// `default` when a namespaced one names none.
fn namespace_of<K>(given: &str) -> Option<String>
where
    K: Resource,
    K::Scope: 'static,
{
    if !is_namespaced::<K>() {
        None
    } else if given.is_empty() {
        Some("default".to_string())
    } else {
        Some(given.to_string())
    }
}

fn object_id<K>(namespace: &str, name: &str) -> ObjectId
where
    K: Resource<DynamicType = ()>,
    K::Scope: 'static,
{
    ObjectId {
        collection: collection::<K>(),
        namespace: namespace_of::<K>(namespace).unwrap_or_default(),
        name: name.to_string(),
    }
}

fn from_value<K: Resource<DynamicType = ()> + DeserializeOwned>(value: Value) -> K {
    match serde_json::from_value(value) {
        Ok(object) => object,
        Err(e) => panic!(
            "fake api: the stored {} does not deserialize: {e}",
            K::kind(&())
        ),
    }
}
