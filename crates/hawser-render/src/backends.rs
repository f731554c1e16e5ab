//! The `backends` library's Rust half: a Service port and its EndpointSlices
//! become one HAProxy backend with one server per endpoint.
//!
//! Server names come from the endpoint (`ep_<address>_<port>`), not from its
//! position, so a reordered EndpointSlice renames nothing and the agent can
//! apply endpoint churn as runtime changes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use hawser_model::{
    Kind, ObjectKey, ObjectRef, Service, ServicePort, ServicePortRef, ServiceType, Store,
};

use crate::config::Settings;
use crate::features::{
    ANNOTATION_PREFIX, BACKEND_ANNOTATIONS, BACKEND_CA_SECRET_ANNOTATION, BackendFeatures,
    backend_features,
};
use crate::features::{Target, read_annotations};
use crate::report::Diagnostics;
use crate::validate;
use hawser_plan::{BackendMode, BackendPlan, ServerPlan, ServerState};

mod kept;
pub(crate) use kept::{BackendReuse, KeptBackends};

/// The annotation that picks a Service's balance algorithm.
pub const BALANCE_ANNOTATION: &str = "hawser.dev/balance";
/// The annotation that sets a Service's `timeout server`.
pub const TIMEOUT_SERVER_ANNOTATION: &str = "hawser.dev/timeout-server";
const DEFAULT_WEIGHT: u16 = 1;
/// The balance algorithm of a Service that asks for none.
pub const DEFAULT_BALANCE: &str = "roundrobin";

/// A Service port as a route refers to it: one HAProxy backend.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct BackendKey {
    pub namespace: String,
    pub service: String,
    pub port: ServicePortRef,
    /// Backend annotations of the Ingress routing here (over the Service's
    /// own): Ingresses asking different settings of one Service port each
    /// get a backend of their own.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, String>,
}

impl BackendKey {
    /// The HAProxy backend name; unambiguous, since namespaces, names and
    /// port names hold no `_`.
    pub fn name(&self) -> String {
        let base = format!("be_{}_{}_{}", self.namespace, self.service, self.port);
        if self.overrides.is_empty() {
            return base;
        }
        // A stable short name for the set of settings.
        let mut hash = <sha2::Sha256 as sha2::Digest>::new();
        for (key, value) in &self.overrides {
            sha2::Digest::update(&mut hash, key.as_bytes());
            sha2::Digest::update(&mut hash, b"\0");
            sha2::Digest::update(&mut hash, value.as_bytes());
            sha2::Digest::update(&mut hash, b"\0");
        }
        let digest = hex::encode(sha2::Digest::finalize(hash));
        format!("{base}_v{}", &digest[..8])
    }

    pub fn validate(&self) -> Result<(), String> {
        validate::label_name("namespace", &self.namespace)?;
        validate::label_name("backend service name", &self.service)?;
        match &self.port {
            ServicePortRef::Number(n) => validate::port("backend service port", *n)
                .map(|_| ())
                .map_err(Into::into),
            ServicePortRef::Name(name) => {
                let ok = !name.is_empty()
                    && name.len() <= 15
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
                if ok {
                    Ok(())
                } else {
                    Err(format!(
                        "backend service port name {name:?} is not a valid port name"
                    ))
                }
            }
        }
    }

    /// The Service port by its Kubernetes names.
    pub(crate) fn service_port(&self) -> hawser_plan::ServicePort {
        hawser_plan::ServicePort {
            namespace: self.namespace.clone(),
            service: self.service.clone(),
            port: self.port.to_string(),
        }
    }

    fn describe(&self) -> String {
        let with = if self.overrides.is_empty() {
            ""
        } else {
            " with an Ingress's backend settings"
        };
        format!(
            "Service {}/{} port {}{with}",
            self.namespace, self.service, self.port
        )
    }
}

/// Backend-wide settings a Service asks for through annotations.
struct ServiceSettings {
    balance: String,
    timeout_server: Option<String>,
    features: BackendFeatures,
}

/// What `service`'s annotations (read through the enabled dialects), with
/// an Ingress's `overrides` over them, ask of its backends.
fn service_settings(
    service: &Service,
    overrides: &BTreeMap<String, String>,
    settings: &Settings,
    warnings: &mut BTreeMap<ObjectRef, std::collections::BTreeSet<String>>,
) -> Result<ServiceSettings, String> {
    let read = read_annotations(
        &service.annotations,
        Target::Service,
        &service.key.namespace,
        &settings.annotation_frontends,
        settings.foreign_annotations,
    )
    .map_err(|e| e.to_string())?;
    if !read.warnings.is_empty() {
        let service_ref = ObjectRef::new(Kind::Service, service.key.clone());
        warnings
            .entry(service_ref)
            .or_default()
            .extend(read.warnings.iter().cloned());
    }
    let mut backend = BTreeMap::new();
    for (key, value) in read.map.iter().chain(overrides) {
        match key.strip_prefix(ANNOTATION_PREFIX) {
            Some(name) if BACKEND_ANNOTATIONS.contains(&name) => {
                backend.insert(name, value.as_str());
            }
            Some(_) => {
                let message = format!("annotation {key} is not one hawser knows");
                return Err(read.in_their_words(message));
            }
            None => {}
        }
    }
    let features = backend_features(&backend).map_err(|e| read.in_their_words(e.to_string()))?;
    Ok(ServiceSettings {
        balance: features
            .balance
            .clone()
            .unwrap_or_else(|| DEFAULT_BALANCE.to_string()),
        timeout_server: features.timeout_server.clone(),
        features,
    })
}

/// Reads the CA a Service's pods are verified with (`backend-ca-secret`)
/// into `ca_files` (tree path → PEM), and points the settings at it.
fn with_ca_file(
    mut settings: ServiceSettings,
    store: &Store,
    service: &ObjectKey,
    ca_files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<ServiceSettings, String> {
    let Some((name, path)) = &mut settings.features.ca else {
        return Ok(settings);
    };
    let key = ObjectKey::new(&service.namespace, name.as_str());
    let (file, certificates) = crate::tls::ca_file(store, &key).map_err(|why| {
        format!(
            "annotation {BACKEND_CA_SECRET_ANNOTATION}: Secret {key}: {why}; the pods are not spoken to unverified"
        )
    })?;
    *path = file.clone();
    ca_files.insert(file, certificates);
    Ok(settings)
}

/// One backend per referenced Service port. A missing Service or port still
/// gets a backend (with no servers, so HAProxy answers 503) and a warning.
///
/// A plan kept from the last render is reused when what it was made of is
/// unchanged, and a plan made of the Service alone is kept (see `kept`).
pub(crate) fn backend_plans<'a>(
    store: &Store,
    settings: &Settings,
    referenced: impl IntoIterator<Item = (&'a BackendKey, &'a ObjectRef)>,
    ca_files: &mut BTreeMap<String, Vec<u8>>,
    reuse: &mut BackendReuse,
    diags: &mut Diagnostics,
) -> Vec<Arc<BackendPlan>> {
    let mut rejected_services = BTreeMap::new();
    let mut service_warnings = BTreeMap::new();
    let referenced = referenced.into_iter();
    reuse.expect(referenced.size_hint().0);
    let mut plans: Vec<Arc<BackendPlan>> = referenced
        .map(|(key, referrer)| {
            if let Some(kept) = reuse.reuse(key) {
                return kept;
            }
            let service_key = ObjectKey::new(&key.namespace, &key.service);
            let service = store.service(&service_key);
            let mut plan = BackendPlan {
                name: key.name(),
                source: key.describe(),
                balance: DEFAULT_BALANCE.to_string(),
                timeout_server: None,
                timeout_connect: None,
                servers: Vec::new(),
                mode: BackendMode::Http,
                cookie: None,
                role: Default::default(),
                service: Some(key.service_port()),
            };
            let Some(service) = service else {
                diags.warn(
                    referrer,
                    format!("{} does not exist; it answers 503", key.describe()),
                );
                return Arc::new(plan);
            };
            let reported = diags.len();
            let service_ref = ObjectRef::new(Kind::Service, service_key);
            let asked = service_settings(service, &key.overrides, settings, &mut service_warnings)
                .and_then(|asked| with_ca_file(asked, store, &service.key, ca_files));
            let settings = match asked {
                Ok(asked) => asked,
                Err(reason) => {
                    rejected_services.insert(service_ref, reason);
                    return Arc::new(plan);
                }
            };
            plan.balance = settings.balance;
            plan.timeout_server = settings.timeout_server;
            plan.timeout_connect = settings.features.timeout_connect.clone();
            plan.cookie = settings.features.cookie();
            let Some(port) = service.port(&key.port) else {
                diags.warn(
                    referrer,
                    format!("{} has no such port; it answers 503", key.describe()),
                );
                return Arc::new(plan);
            };
            plan.servers = match &service.service_type {
                ServiceType::Endpoints => endpoint_servers(store, service, port, diags),
                ServiceType::ExternalName(host) => external_server(&service_ref, host, port, diags),
            };
            for server in &mut plan.servers {
                server.keywords = settings.features.server_keywords(&server.name);
                server.proto = settings.features.proto().map(str::to_string);
            }
            // Made of the Service and its EndpointSlices alone, nothing reported.
            let alone = settings.features.ca.is_none()
                && diags.len() == reported
                && !service_warnings.contains_key(&service_ref);
            let plan = Arc::new(plan);
            if alone {
                reuse.keep(key, &plan);
            }
            plan
        })
        .collect();
    for (service, warnings) in service_warnings {
        for warning in warnings {
            diags.warn(&service, warning);
        }
    }
    for (service, reason) in rejected_services {
        diags.reject(&service, format!("{reason}; its backends answer 503"));
    }
    plans.sort_by(|a, b| a.name.cmp(&b.name));
    plans
}

/// Ready endpoints become servers. When none is ready, serving endpoints that
/// are terminating are used instead, as kube-proxy does, rather than failing.
/// Servers are sorted by name, one per name (an address two slices list is
/// one server).
fn endpoint_servers(
    store: &Store,
    service: &Service,
    port: &ServicePort,
    diags: &mut Diagnostics,
) -> Vec<ServerPlan> {
    let mut ready = Vec::new();
    let mut fallback = Vec::new();
    for slice in store.endpoint_slices_for(&service.key) {
        let slice_ref = || ObjectRef::new(Kind::EndpointSlice, slice.key.clone());
        let Some(slice_port) = slice.ports.iter().find(|p| p.name == port.name) else {
            continue;
        };
        let endpoint_port = match validate::port("endpoint port", slice_port.port) {
            Ok(p) => p,
            Err(reason) => {
                diags.warn(&slice_ref(), reason);
                continue;
            }
        };
        for endpoint in &slice.endpoints {
            let target = if endpoint.ready {
                &mut ready
            } else if endpoint.serving {
                &mut fallback
            } else {
                continue;
            };
            for address in &endpoint.addresses {
                match validate::ip_address(address) {
                    Ok(address) => target.push(server(address, endpoint_port, false)),
                    Err(reason) => diags.warn(&slice_ref(), format!("{reason}; endpoint skipped")),
                }
            }
        }
    }
    let mut chosen = if ready.is_empty() { fallback } else { ready };
    chosen.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    // Servers of one name are alike: their name is their address and port.
    chosen.dedup_by(|a, b| a.name == b.name);
    chosen
}

fn external_server(
    service: &ObjectRef,
    host: &str,
    port: &ServicePort,
    diags: &mut Diagnostics,
) -> Vec<ServerPlan> {
    if let Err(reason) = validate::subdomain_name("externalName", host) {
        diags.reject(service, format!("{reason}; its backends answer 503"));
        return Vec::new();
    }
    let number = match &port.target_port {
        Some(ServicePortRef::Number(n)) => *n,
        _ => port.port,
    };
    match validate::port("port", number) {
        Ok(p) => vec![server(host.to_string(), p, true)],
        Err(reason) => {
            diags.reject(service, reason);
            Vec::new()
        }
    }
}

fn server(address: String, port: u16, resolve: bool) -> ServerPlan {
    // `ep_<address>_<port>`, in one allocation of the size it takes.
    let mut name = String::with_capacity(address.len() + "ep__65535".len());
    let _ = write!(name, "ep_{address}_{port}"); // a String takes any write
    ServerPlan {
        name,
        address,
        port,
        weight: DEFAULT_WEIGHT,
        state: ServerState::Ready,
        resolve,
        proto: None,
        keywords: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_knows_its_service_by_whole_names() {
        let key = BackendKey {
            namespace: "app".to_string(),
            service: "web".to_string(),
            port: ServicePortRef::Number(80),
            overrides: BTreeMap::new(),
        };
        let plan = BackendPlan {
            name: key.name(),
            source: key.describe(),
            balance: "roundrobin".to_string(),
            timeout_server: None,
            timeout_connect: None,
            servers: Vec::new(),
            mode: BackendMode::Http,
            cookie: None,
            role: Default::default(),
            service: Some(key.service_port()),
        };
        assert!(plan.serves_service("app", "web"));
        assert!(!plan.serves_service("app", "we"));
        assert!(!plan.serves_service("ap", "web"));
        assert!(!plan.serves_service("app", "web-2"));
    }
}
