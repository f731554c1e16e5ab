//! Conversion from the Kubernetes API types (k8s-openapi, and the gateway-api
//! crate's for Gateway API kinds) into trimmed views.
//!
//! Both sources use these: the manifests directory deserializes YAML into the
//! k8s-openapi types, and the cluster watchers receive them from the API server.
//! Each view implements [`FromK8s`] for the one API type it trims, so a caller
//! writes `Ingress::from_k8s(&ingress)` with the trait in scope.

mod gateway_api;
mod routes;

use std::collections::BTreeMap;

use hawser_model::{
    ConfigMap, Endpoint, EndpointPort, EndpointSlice, IS_DEFAULT_CLASS_ANNOTATION, Ingress,
    IngressBackend, IngressClass, IngressPath, IngressRule, IngressTls, Kind, ObjectKey, PathType,
    SERVICE_ANNOTATION_PREFIXES, SERVICE_NAME_LABEL, Secret, Service, ServicePort, ServicePortRef,
    ServiceType,
};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The namespace Kubernetes puts a namespaced object in when none is given.
const DEFAULT_NAMESPACE: &str = "default";

/// Why an object could not be turned into a view.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConvertError {
    #[error("{kind} has no metadata.name")]
    MissingName { kind: Kind },
    #[error("{kind} {key}: {reason}")]
    Invalid {
        kind: Kind,
        key: ObjectKey,
        reason: String,
    },
}

/// A trimmed view made from the Kubernetes API object it keeps the used fields of.
pub trait FromK8s: Sized {
    /// The k8s-openapi (or gateway-api) type the view is made from.
    type K8s;

    /// The view of `obj`, or why `obj` cannot be used.
    fn from_k8s(obj: &Self::K8s) -> Result<Self, ConvertError>;
}

/// `metadata.name`; an empty name is as missing as an absent one (the API server
/// rejects both).
fn object_name(kind: Kind, meta: &ObjectMeta) -> Result<String, ConvertError> {
    meta.name
        .clone()
        .filter(|name| !name.is_empty())
        .ok_or(ConvertError::MissingName { kind })
}

fn namespaced_key(kind: Kind, meta: &ObjectMeta) -> Result<ObjectKey, ConvertError> {
    let name = object_name(kind, meta)?;
    // An empty namespace means the default one, as for `kubectl apply`.
    let namespace = meta
        .namespace
        .clone()
        .filter(|namespace| !namespace.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
    Ok(ObjectKey::new(namespace, name))
}

fn invalid(kind: Kind, key: &ObjectKey, reason: impl Into<String>) -> ConvertError {
    ConvertError::Invalid {
        kind,
        key: key.clone(),
        reason: reason.into(),
    }
}

impl FromK8s for Ingress {
    type K8s = networking::Ingress;

    fn from_k8s(obj: &networking::Ingress) -> Result<Self, ConvertError> {
        let kind = Kind::Ingress;
        let key = namespaced_key(kind, &obj.metadata)?;
        let spec = obj.spec.clone().unwrap_or_default();
        let backend =
            |b: &networking::IngressBackend| convert_backend(b).map_err(|r| invalid(kind, &key, r));

        let default_backend = spec.default_backend.as_ref().map(backend).transpose()?;
        let tls = spec
            .tls
            .unwrap_or_default()
            .into_iter()
            .map(|t| IngressTls {
                hosts: t.hosts.unwrap_or_default(),
                secret_name: t.secret_name,
            })
            .collect();
        let mut rules = Vec::new();
        for rule in spec.rules.unwrap_or_default() {
            let mut paths = Vec::new();
            for p in rule.http.map(|h| h.paths).unwrap_or_default() {
                let path_type = match p.path_type.as_str() {
                    "Exact" => PathType::Exact,
                    "Prefix" => PathType::Prefix,
                    "ImplementationSpecific" => PathType::ImplementationSpecific,
                    // k8s-openapi reads a missing (required) pathType as "".
                    "" => return Err(invalid(kind, &key, "a path has no pathType")),
                    other => {
                        return Err(invalid(
                            kind,
                            &key,
                            format!(
                                "pathType {other:?} is not Exact, Prefix or ImplementationSpecific"
                            ),
                        ));
                    }
                };
                paths.push(IngressPath {
                    path: p.path,
                    path_type,
                    backend: backend(&p.backend)?,
                });
            }
            rules.push(IngressRule {
                host: rule.host.filter(|h| !h.is_empty()),
                paths,
            });
        }
        Ok(Ingress {
            created: obj
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string()),
            class_name: spec.ingress_class_name,
            annotations: obj.metadata.annotations.clone().unwrap_or_default(),
            default_backend,
            tls,
            rules,
            key,
        })
    }
}

fn convert_backend(b: &networking::IngressBackend) -> Result<IngressBackend, String> {
    if let Some(service) = &b.service {
        let port = match &service.port {
            Some(networking::ServiceBackendPort {
                number: Some(n), ..
            }) => ServicePortRef::Number(*n),
            Some(networking::ServiceBackendPort {
                name: Some(name), ..
            }) => ServicePortRef::Name(name.clone()),
            _ => return Err(format!("backend service {:?} names no port", service.name)),
        };
        return Ok(IngressBackend::Service {
            name: service.name.clone(),
            port,
        });
    }
    if let Some(resource) = &b.resource {
        return Ok(IngressBackend::Resource {
            kind: resource.kind.clone(),
            name: resource.name.clone(),
        });
    }
    Err("backend has neither service nor resource".to_string())
}

impl FromK8s for IngressClass {
    type K8s = networking::IngressClass;

    fn from_k8s(obj: &networking::IngressClass) -> Result<Self, ConvertError> {
        let kind = Kind::IngressClass;
        let name = object_name(kind, &obj.metadata)?;
        let is_default = obj
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(IS_DEFAULT_CLASS_ANNOTATION))
            .is_some_and(|v| v == "true");
        Ok(IngressClass {
            controller: obj
                .spec
                .as_ref()
                .and_then(|s| s.controller.clone())
                .unwrap_or_default(),
            is_default,
            name,
        })
    }
}

impl FromK8s for Service {
    type K8s = core::Service;

    fn from_k8s(obj: &core::Service) -> Result<Self, ConvertError> {
        let kind = Kind::Service;
        let key = namespaced_key(kind, &obj.metadata)?;
        let spec = obj.spec.clone().unwrap_or_default();
        let service_type = match spec.type_.as_deref() {
            Some("ExternalName") => match spec.external_name {
                Some(name) if !name.is_empty() => ServiceType::ExternalName(name),
                _ => {
                    return Err(invalid(
                        kind,
                        &key,
                        "type ExternalName without spec.externalName",
                    ));
                }
            },
            _ => ServiceType::Endpoints,
        };
        let ports = spec
            .ports
            .unwrap_or_default()
            .into_iter()
            .map(|p| ServicePort {
                name: p.name.unwrap_or_default(),
                port: p.port,
                target_port: p.target_port.map(|t| match t {
                    IntOrString::Int(n) => ServicePortRef::Number(n),
                    IntOrString::String(s) => ServicePortRef::Name(s),
                }),
                protocol: p.protocol.unwrap_or_else(|| "TCP".to_string()),
            })
            .collect();
        let annotations = obj
            .metadata
            .annotations
            .iter()
            .flatten()
            .filter(|(k, _)| SERVICE_ANNOTATION_PREFIXES.iter().any(|p| k.starts_with(p)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Service {
            key,
            annotations,
            service_type,
            ports,
        })
    }
}

impl FromK8s for EndpointSlice {
    type K8s = discovery::EndpointSlice;

    fn from_k8s(obj: &discovery::EndpointSlice) -> Result<Self, ConvertError> {
        let key = namespaced_key(Kind::EndpointSlice, &obj.metadata)?;
        let service_name = obj
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SERVICE_NAME_LABEL))
            .cloned();
        let ports = obj
            .ports
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| {
                Some(EndpointPort {
                    name: p.name.unwrap_or_default(),
                    port: p.port?,
                    protocol: p.protocol.unwrap_or_else(|| "TCP".to_string()),
                })
            })
            .collect();
        let endpoints = obj
            .endpoints
            .iter()
            .map(|e| {
                let c = e.conditions.clone().unwrap_or_default();
                let terminating = c.terminating.unwrap_or(false);
                Endpoint {
                    addresses: e.addresses.clone(),
                    ready: c.ready.unwrap_or(!terminating),
                    serving: c.serving.unwrap_or(true),
                    terminating,
                    target: e.target_ref.as_ref().and_then(|t| t.name.clone()),
                }
            })
            .collect();
        Ok(EndpointSlice {
            key,
            service_name,
            address_type: obj.address_type.clone(),
            ports,
            endpoints,
        })
    }
}

impl FromK8s for Secret {
    type K8s = core::Secret;

    /// Keeps `tls.crt`, `tls.key`, `auth`, `ca.crt` and the other keys (from
    /// `data`, overridden by `stringData` as the API server would merge them).
    fn from_k8s(obj: &core::Secret) -> Result<Self, ConvertError> {
        let key = namespaced_key(Kind::Secret, &obj.metadata)?;
        let mut data: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        for (k, v) in obj.data.iter().flatten() {
            data.insert(k.as_str(), v.0.clone());
        }
        for (k, v) in obj.string_data.iter().flatten() {
            data.insert(k.as_str(), v.clone().into_bytes());
        }
        Ok(Secret {
            secret_type: obj.type_.clone().unwrap_or_else(|| "Opaque".to_string()),
            tls_crt: data.remove("tls.crt"),
            tls_key: data.remove("tls.key"),
            auth: data.remove("auth"),
            ca_crt: data.remove("ca.crt"),
            entries: data.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            key,
        })
    }
}

impl FromK8s for ConfigMap {
    type K8s = core::ConfigMap;

    /// Keeps `data` (binary data is not read).
    fn from_k8s(obj: &core::ConfigMap) -> Result<Self, ConvertError> {
        Ok(ConfigMap {
            key: namespaced_key(Kind::ConfigMap, &obj.metadata)?,
            data: obj.data.clone().unwrap_or_default(),
        })
    }
}
