//! A fake Kubernetes API for the Secrets of one namespace, on `tower_test::mock` (the
//! kube-rs testing pattern): GET/POST/PUT with real JSON bodies (Secrets with base64
//! data, `Status` bodies for errors), resourceVersions that only grow, and
//! compare-and-swap on replace. Each [`FakeApi::store`] is a new client: one run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::store::{KubeSecretStore, SecretData};

pub const NAMESPACE: &str = "hawser-system";
/// The annotation another writer leaves when it only touches a Secret.
pub const TOUCHED: &str = "example.com/touched-by";

/// One request the fake answered.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: Method,
    /// The Secret name (from the path, or the body of a create).
    pub name: String,
    /// The resourceVersion a write carried.
    pub resource_version: Option<String>,
    /// The JSON body of a write.
    pub body: Value,
    /// The HTTP status answered.
    pub status: u16,
}

#[derive(Default)]
struct State {
    /// Secrets by name, as JSON objects.
    secrets: BTreeMap<String, Value>,
    last_version: u64,
    requests: Vec<Seen>,
    /// Before the next write to this Secret, another writer stores this data (or, with
    /// `None`, only touches its metadata).
    race: Option<(String, Option<SecretData>)>,
    forbidden: BTreeSet<String>,
}

/// The fake server and the runtime its clients run on.
pub struct FakeApi {
    runtime: Runtime,
    state: Arc<Mutex<State>>,
}

impl FakeApi {
    pub fn new() -> Self {
        Self::with_state(State::default())
    }

    fn with_state(state: State) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        Self {
            runtime,
            state: Arc::new(Mutex::new(state)),
        }
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// A store on a fresh client: what one `hawser certs` run gets.
    pub fn store(&self) -> KubeSecretStore {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let state = Arc::clone(&self.state);
        self.runtime.spawn(async move {
            while let Some((request, respond)) = handle.next_request().await {
                let (parts, body) = request.into_parts();
                let body = body.collect_bytes().await.unwrap();
                let (status, answer) =
                    state
                        .lock()
                        .unwrap()
                        .answer(&parts.method, parts.uri.path(), &body);
                let response = Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&answer).unwrap()))
                    .unwrap();
                respond.send_response(response);
            }
        });
        let _context = self.runtime.enter();
        let client = Client::new(service, NAMESPACE);
        KubeSecretStore::new(client, NAMESPACE, self.runtime.handle().clone())
    }

    /// Another API server holding the same Secrets: where a concurrent run prepares what
    /// it will write.
    pub fn fork(&self) -> Self {
        let state = self.state.lock().unwrap();
        Self::with_state(State {
            secrets: state.secrets.clone(),
            last_version: state.last_version,
            ..State::default()
        })
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn writes(&self) -> Vec<Seen> {
        let mut requests = self.requests();
        requests.retain(|r| r.method != Method::GET);
        requests
    }

    /// The Secret as stored (JSON).
    pub fn object(&self, name: &str) -> Option<Value> {
        self.state.lock().unwrap().secrets.get(name).cloned()
    }

    /// The Secret's decoded data.
    pub fn data(&self, name: &str) -> Option<SecretData> {
        let secret: Secret = serde_json::from_value(self.object(name)?).unwrap();
        let data = secret.data.unwrap_or_default().into_iter();
        Some(SecretData(data.map(|(k, v)| (k, v.0)).collect()))
    }

    /// Every Secret's resourceVersion.
    pub fn versions(&self) -> BTreeMap<String, String> {
        let state = self.state.lock().unwrap();
        let versions = state.secrets.iter().map(|(name, secret)| {
            let version = secret["metadata"]["resourceVersion"].as_str().unwrap();
            (name.clone(), version.to_owned())
        });
        versions.collect()
    }

    /// Another writer changes `name` right before this fake handles the next write to it.
    pub fn race_next_write(&self, name: &str, data: Option<SecretData>) {
        self.state.lock().unwrap().race = Some((name.to_owned(), data));
    }

    /// Another writer annotates `name` now (a new resourceVersion, same data).
    pub fn touch(&self, name: &str) {
        self.state.lock().unwrap().other_writer(name, None);
    }

    /// Every request on `name` is answered 403.
    pub fn forbid(&self, name: &str) {
        self.state.lock().unwrap().forbidden.insert(name.to_owned());
    }
}

fn status(code: StatusCode, reason: &str, message: String, name: &str) -> (StatusCode, Value) {
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": { "name": name, "kind": "secrets" },
        "code": code.as_u16(),
    });
    (code, body)
}

impl State {
    fn answer(&mut self, method: &Method, path: &str, body: &[u8]) -> (StatusCode, Value) {
        let collection = format!("/api/v1/namespaces/{NAMESPACE}/secrets");
        let Some(rest) = path.strip_prefix(&collection) else {
            return status(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("no route {path}"),
                "",
            );
        };
        let body: Value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(body).unwrap()
        };
        let name = match rest.strip_prefix('/') {
            Some(name) => name.to_owned(),
            None => body["metadata"]["name"].as_str().unwrap_or("").to_owned(),
        };
        let answer = if self.forbidden.contains(&name) {
            status(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!(
                    "secrets \"{name}\" is forbidden: User \"system:serviceaccount:{NAMESPACE}:hawser\" cannot {method} resource \"secrets\""
                ),
                &name,
            )
        } else {
            match (method.clone(), rest.is_empty()) {
                (Method::GET, false) => self.get(&name),
                (Method::POST, true) => self.create(&name, body.clone()),
                (Method::PUT, false) => self.replace(&name, body.clone()),
                _ => status(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "MethodNotAllowed",
                    format!("{method} {path} is not served by this fake"),
                    &name,
                ),
            }
        };
        self.requests.push(Seen {
            method: method.clone(),
            resource_version: body["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_owned),
            name,
            body,
            status: answer.0.as_u16(),
        });
        answer
    }

    fn next_version(&mut self) -> String {
        self.last_version += 1;
        self.last_version.to_string()
    }

    fn not_found(name: &str) -> (StatusCode, Value) {
        let message = format!("secrets \"{name}\" not found");
        status(StatusCode::NOT_FOUND, "NotFound", message, name)
    }

    fn get(&self, name: &str) -> (StatusCode, Value) {
        match self.secrets.get(name) {
            Some(secret) => (StatusCode::OK, secret.clone()),
            None => Self::not_found(name),
        }
    }

    /// Stores `secret` as a new version of `name`, keeping what the server owns.
    fn store(&mut self, name: &str, mut secret: Value) -> Value {
        let version = self.next_version();
        let (uid, created) = match self.secrets.get(name) {
            Some(old) => (
                old["metadata"]["uid"].clone(),
                old["metadata"]["creationTimestamp"].clone(),
            ),
            None => (
                json!(format!("uid-{name}-{version}")),
                json!("2027-01-15T08:00:00Z"),
            ),
        };
        let meta = &mut secret["metadata"];
        meta["namespace"] = json!(NAMESPACE);
        meta["resourceVersion"] = json!(version);
        meta["uid"] = uid;
        meta["creationTimestamp"] = created;
        secret["kind"] = json!("Secret");
        secret["apiVersion"] = json!("v1");
        self.secrets.insert(name.to_owned(), secret.clone());
        secret
    }

    /// The race, if one waits on `name`.
    fn interfere(&mut self, name: &str) {
        if self.race.as_ref().is_some_and(|(raced, _)| raced == name)
            && let Some((_, data)) = self.race.take()
        {
            self.other_writer(name, data);
        }
    }

    /// Another writer stores `data` under `name`, or with `None` annotates it.
    fn other_writer(&mut self, name: &str, data: Option<SecretData>) {
        let mut secret = self
            .secrets
            .get(name)
            .cloned()
            .unwrap_or_else(|| json!({ "metadata": { "name": name }, "type": "Opaque" }));
        match data {
            Some(data) => {
                let data: Secret = Secret {
                    data: Some(
                        data.0
                            .into_iter()
                            .map(|(k, v)| (k, k8s_openapi::ByteString(v)))
                            .collect(),
                    ),
                    ..Secret::default()
                };
                secret["data"] = serde_json::to_value(&data).unwrap()["data"].clone();
            }
            None => secret["metadata"]["annotations"][TOUCHED] = json!("another-writer"),
        }
        self.store(name, secret);
    }

    fn create(&mut self, name: &str, body: Value) -> (StatusCode, Value) {
        self.interfere(name);
        if self.secrets.contains_key(name) {
            let message = format!("secrets \"{name}\" already exists");
            return status(StatusCode::CONFLICT, "AlreadyExists", message, name);
        }
        if !body["metadata"]["resourceVersion"].is_null() {
            let message = "metadata.resourceVersion: Invalid value: must be unset to create";
            return status(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                message.into(),
                name,
            );
        }
        (StatusCode::CREATED, self.store(name, body))
    }

    fn replace(&mut self, name: &str, body: Value) -> (StatusCode, Value) {
        self.interfere(name);
        let Some(current) = self.secrets.get(name) else {
            return Self::not_found(name);
        };
        let sent = &body["metadata"]["resourceVersion"];
        // A real server takes an update without resourceVersion as unconditional; this
        // fake refuses it, so that a blind overwrite fails the tests.
        if sent.is_null() {
            let message = "metadata.resourceVersion: Required value (this fake)";
            return status(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid",
                message.into(),
                name,
            );
        }
        if *sent != current["metadata"]["resourceVersion"] {
            let message = format!(
                "Operation cannot be fulfilled on secrets \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            );
            return status(StatusCode::CONFLICT, "Conflict", message, name);
        }
        (StatusCode::OK, self.store(name, body))
    }
}
