//! Secrets in one Kubernetes namespace, written compare-and-swap.
//!
//! ```text
//! read(name)  ── GET  secrets/<name> ──▶ SecretData, and remember its metadata (resourceVersion)
//! write(name) ── seen at read ───────▶ PUT  secrets/<name> with that resourceVersion
//!             ── absent / never read ▶ POST secrets (create)
//!             ── 409 Conflict / AlreadyExists ──▶ StoreError::Conflict (nothing overwritten)
//! ```
//!
//! Two `hawser certs` runs at once (two Jobs) both read the same versions; the first
//! write wins and the other run stops with [`StoreError::Conflict`] before touching
//! anything, so the lifecycle's order (issuer first) holds and a rerun resumes the
//! winner's generation.
//!
//! The [`SecretStore`] trait is synchronous; this store blocks on a Tokio runtime handle
//! it is given. That handle must belong to a multi-threaded runtime (whose workers drive
//! the connection). Called outside any runtime it simply blocks; called on a worker of a
//! multi-threaded runtime it moves off the worker first (`block_in_place`); a
//! current-thread runtime cannot wait on itself, which is an error rather than a
//! deadlock.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Mutex, PoisonError};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use tokio::runtime::{Handle, RuntimeFlavor};

use super::{SecretData, SecretStore, StoreError, check_name};

/// Label (key, value) on every Secret this store writes: who manages it.
pub const MANAGED_BY_LABEL: (&str, &str) = ("app.kubernetes.io/managed-by", "hawser");
/// Label (key, value) on every Secret this store writes: what it is part of.
pub const COMPONENT_LABEL: (&str, &str) = ("app.kubernetes.io/component", "certificates");
/// The type of the Secrets written (the keys are the lifecycle's own, not `kubernetes.io/tls`'s).
const SECRET_TYPE: &str = "Opaque";

/// Secrets in one namespace, through the Kubernetes API. Each write replaces the whole
/// Secret, but only the version this store read (see the module docs); `Debug` shows the
/// namespace and the versions seen, never data.
pub struct KubeSecretStore {
    api: Api<Secret>,
    namespace: String,
    handle: Handle,
    /// Per Secret name: its metadata as last read or written by this store (the
    /// `resourceVersion` a replace must match), or `None` when it did not exist.
    seen: Mutex<BTreeMap<String, Option<ObjectMeta>>>,
}

impl KubeSecretStore {
    /// A store over `namespace` through `client`. `handle` is the multi-threaded runtime
    /// the client was created on.
    pub fn new(client: Client, namespace: &str, handle: Handle) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            handle,
            seen: Mutex::new(BTreeMap::new()),
        }
    }

    /// A store configured the way `kubectl` and in-cluster Pods are (`Client::try_default`:
    /// the kubeconfig, else the service account), over `namespace` or, when `None`, the
    /// configuration's namespace (the Pod's own in-cluster).
    pub fn connect(namespace: Option<&str>, handle: Handle) -> Result<Self, StoreError> {
        // The client spawns its connection task, so it must be created on `handle`.
        let client =
            wait(&handle, "configure a client", Client::try_default())?.map_err(|source| {
                StoreError::Connect {
                    source: Box::new(source),
                }
            })?;
        let namespace = namespace.unwrap_or(client.default_namespace()).to_owned();
        Ok(Self::new(client, &namespace, handle))
    }

    /// The namespace holding the Secrets.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn remember(&self, name: &str, meta: Option<ObjectMeta>) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), meta);
    }

    fn seen(&self, name: &str) -> Option<ObjectMeta> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
            .flatten()
    }

    fn api_error(&self, action: &'static str, name: &str, source: kube::Error) -> StoreError {
        StoreError::Api {
            action,
            namespace: self.namespace.clone(),
            name: name.to_owned(),
            source: Box::new(source),
        }
    }
}

/// Waits for `future` on `handle` from synchronous code (see the module docs).
fn wait<F: Future>(handle: &Handle, what: &str, future: F) -> Result<F::Output, StoreError> {
    let blocking = |reason| StoreError::Blocking {
        what: what.to_owned(),
        reason,
    };
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return Err(blocking(
            "the store needs a multi-threaded runtime to drive its connection",
        ));
    }
    match Handle::try_current().map(|current| current.runtime_flavor()) {
        Err(_) => Ok(handle.block_on(future)),
        Ok(RuntimeFlavor::MultiThread) => {
            Ok(tokio::task::block_in_place(|| handle.block_on(future)))
        }
        Ok(_) => Err(blocking(
            "called on a current-thread runtime; call it from spawn_blocking or a multi-threaded runtime",
        )),
    }
}

/// The metadata of a Secret about to be written: what was read (its labels, annotations
/// and owners are someone's), or a fresh one, with the store's labels.
fn write_metadata(name: &str, namespace: &str, seen: Option<ObjectMeta>) -> ObjectMeta {
    let mut meta = seen.unwrap_or_else(|| ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..ObjectMeta::default()
    });
    // The server keeps its own field-ownership record when none is sent.
    meta.managed_fields = None;
    let labels = meta.labels.get_or_insert_with(BTreeMap::new);
    for (key, value) in [MANAGED_BY_LABEL, COMPONENT_LABEL] {
        labels.insert(key.to_owned(), value.to_owned());
    }
    meta
}

/// 409: a replace over a changed resourceVersion (Conflict) or a create of an existing
/// name (AlreadyExists).
fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status)
        if status.code == 409 || status.is_conflict() || status.is_already_exists())
}

impl SecretStore for KubeSecretStore {
    fn read(&self, name: &str) -> Result<Option<SecretData>, StoreError> {
        check_name(name)?;
        let what = format!("read secret {}/{name}", self.namespace);
        let secret = wait(&self.handle, &what, self.api.get_opt(name))?
            .map_err(|source| self.api_error("read", name, source))?;
        tracing::debug!(
            namespace = %self.namespace,
            secret = name,
            resource_version = secret.as_ref().and_then(|s| s.metadata.resource_version.as_deref()),
            "read secret"
        );
        let Some(secret) = secret else {
            self.remember(name, None);
            return Ok(None);
        };
        let data = SecretData(
            secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(key, ByteString(value))| (key, value))
                .collect(),
        );
        self.remember(name, Some(secret.metadata));
        Ok(Some(data))
    }

    fn write(&self, name: &str, data: &SecretData) -> Result<(), StoreError> {
        check_name(name)?;
        for key in data.0.keys() {
            check_name(key)?;
        }
        let seen = self.seen(name);
        // Replace only the version read; anything else is created, so that an existing
        // Secret this run did not see is never overwritten.
        let replace = seen
            .as_ref()
            .is_some_and(|meta| meta.resource_version.is_some());
        let secret = Secret {
            metadata: write_metadata(name, &self.namespace, seen),
            data: Some(
                data.0
                    .iter()
                    .map(|(key, value)| (key.clone(), ByteString(value.clone())))
                    .collect(),
            ),
            type_: Some(SECRET_TYPE.to_owned()),
            ..Secret::default()
        };
        let params = PostParams::default();
        let what = format!("write secret {}/{name}", self.namespace);
        let result = if replace {
            wait(
                &self.handle,
                &what,
                self.api.replace(name, &params, &secret),
            )?
        } else {
            wait(&self.handle, &what, self.api.create(&params, &secret))?
        };
        match result {
            Ok(stored) => {
                tracing::debug!(
                    namespace = %self.namespace,
                    secret = name,
                    replaced = replace,
                    resource_version = stored.resource_version().as_deref(),
                    "wrote secret"
                );
                self.remember(name, Some(stored.metadata));
                Ok(())
            }
            Err(error) if is_conflict(&error) => {
                tracing::debug!(namespace = %self.namespace, secret = name, "write conflicted");
                Err(StoreError::Conflict {
                    name: name.to_owned(),
                })
            }
            Err(source) => Err(self.api_error("write", name, source)),
        }
    }
}

impl fmt::Debug for KubeSecretStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let versions: BTreeMap<&str, Option<&str>> = seen
            .iter()
            .map(|(name, meta)| {
                let version = meta.as_ref().and_then(|m| m.resource_version.as_deref());
                (name.as_str(), version)
            })
            .collect();
        f.debug_struct("KubeSecretStore")
            .field("namespace", &self.namespace)
            .field("resource_versions", &versions)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
