//! A route's backendRefs → HAProxy backends, or the reason they do not resolve
//! (which the route's `ResolvedRefs` condition reports and which answers 500).

use hawser_model::{BackendRef, Kind, ObjectKey, ServicePortRef, Store};

use super::grants::{self, CrossReference};
use super::table::{BackendTarget, WeightedBackend};
use crate::backends::BackendKey;

/// What becomes of the requests of a backendRef that does not resolve.
pub(super) const ANSWERS_500: &str = "its share of requests answers 500";

/// Why a reference did not resolve, as a `ResolvedRefs` reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unresolved {
    pub reason: &'static str,
    pub message: String,
    /// What that does to requests, for the diagnostic ([`ANSWERS_500`]).
    pub effect: &'static str,
}

/// Resolves the backends of one route.
pub(super) struct Resolver<'a> {
    pub store: &'a Store,
    pub route_kind: Kind,
    pub route: &'a ObjectKey,
}

impl Resolver<'_> {
    pub fn resolve(&self, backend: &BackendRef) -> Result<BackendKey, Unresolved> {
        let unresolved = |reason, message: String| Unresolved {
            reason,
            message,
            effect: ANSWERS_500,
        };
        if !backend.is_service() {
            let group = if backend.group.is_empty() {
                "core"
            } else {
                &backend.group
            };
            return Err(unresolved(
                "InvalidKind",
                format!(
                    "backendRef {:?} is a {group}/{}; hawser routes to Services",
                    backend.name, backend.kind
                ),
            ));
        }
        let namespace = backend
            .namespace
            .as_deref()
            .unwrap_or(&self.route.namespace);
        let reference = CrossReference {
            from_kind: self.route_kind,
            from_namespace: &self.route.namespace,
            to_kind: "Service",
            to_namespace: namespace,
            to_name: &backend.name,
        };
        if !grants::permitted(self.store, &reference) {
            return Err(unresolved(
                "RefNotPermitted",
                format!(
                    "no ReferenceGrant in namespace {namespace:?} lets {}s from {:?} use Service {:?}",
                    self.route_kind, self.route.namespace, backend.name
                ),
            ));
        }
        let Some(port) = backend.port else {
            return Err(unresolved(
                "BackendNotFound",
                format!("backendRef Service {:?} names no port", backend.name),
            ));
        };
        let key = BackendKey {
            namespace: namespace.to_string(),
            service: backend.name.clone(),
            port: ServicePortRef::Number(port),
            overrides: std::collections::BTreeMap::new(),
        };
        key.validate()
            .map_err(|reason| unresolved("BackendNotFound", reason))?;
        let service_key = ObjectKey::new(namespace, &backend.name);
        let service = self.store.service(&service_key).ok_or_else(|| {
            unresolved(
                "BackendNotFound",
                format!("Service {service_key} does not exist"),
            )
        })?;
        if service.port(&key.port).is_none() {
            return Err(unresolved(
                "BackendNotFound",
                format!("Service {service_key} has no port {port}"),
            ));
        }
        Ok(key)
    }

    /// The target a reference resolves to, noting resolved backends in
    /// `used` and the first failure in `first_unresolved`.
    pub fn target(
        &self,
        backend: &BackendRef,
        used: &mut Vec<BackendKey>,
        first_unresolved: &mut Option<Unresolved>,
    ) -> BackendTarget {
        match self.resolve(backend) {
            Ok(key) => {
                used.push(key.clone());
                BackendTarget::Service {
                    backend: key.name(),
                    key,
                }
            }
            Err(unresolved) => {
                let reason = unresolved.message.clone();
                first_unresolved.get_or_insert(unresolved);
                BackendTarget::Unresolved { reason }
            }
        }
    }
}

/// Whether any request can reach a resolved backend.
pub(super) fn reachable(backends: &[WeightedBackend]) -> bool {
    backends
        .iter()
        .any(|b| b.weight > 0 && matches!(b.target, BackendTarget::Service { .. }))
}
