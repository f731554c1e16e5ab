//! Gateway API objects (gateway-api crate types) and Namespaces into views:
//! GatewayClass, Gateway, ReferenceGrant, Namespace.

use std::collections::BTreeMap;

use gateway_api::gatewayclasses as classes;
use gateway_api::gateways::{self as gw, GatewayListenersAllowedRoutesNamespacesFrom as From};
use gateway_api::referencegrants as grants;
use k8s_openapi::api::core::v1 as core;

use super::{ConvertError, FromK8s, invalid, namespaced_key, object_name};
use hawser_model::{
    AllowedRoutes, CertificateRef, GATEWAY_API_GROUP, Gateway, GatewayAddress, GatewayClass,
    GrantFrom, GrantTo, Kind, LabelOperator, LabelRequirement, LabelSelector, Listener,
    ListenerTls, NAMESPACE_NAME_LABEL, Namespace, ReferenceGrant, RouteGroupKind, RouteNamespaces,
    TlsMode,
};

impl FromK8s for GatewayClass {
    type K8s = classes::GatewayClass;

    fn from_k8s(obj: &classes::GatewayClass) -> Result<Self, ConvertError> {
        Ok(GatewayClass {
            name: object_name(Kind::GatewayClass, &obj.metadata)?,
            controller_name: obj.spec.controller_name.clone(),
            generation: obj.metadata.generation,
        })
    }
}

impl FromK8s for Gateway {
    type K8s = gw::Gateway;

    fn from_k8s(obj: &gw::Gateway) -> Result<Self, ConvertError> {
        let kind = Kind::Gateway;
        let key = namespaced_key(kind, &obj.metadata)?;
        let listeners = obj
            .spec
            .listeners
            .iter()
            .map(|l| listener(l).map_err(|reason| invalid(kind, &key, reason)))
            .collect::<Result<_, _>>()?;
        Ok(Gateway {
            generation: obj.metadata.generation,
            created: obj
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string()),
            class_name: obj.spec.gateway_class_name.clone(),
            listeners,
            addresses: obj
                .spec
                .addresses
                .iter()
                .flatten()
                .map(|a| GatewayAddress {
                    address_type: a.r#type.clone().unwrap_or_else(|| "IPAddress".to_string()),
                    value: a.value.clone().unwrap_or_default(),
                })
                .collect(),
            key,
        })
    }
}

fn listener(l: &gw::GatewayListeners) -> Result<Listener, String> {
    let tls = l.tls.as_ref().map(|tls| ListenerTls {
        mode: match tls.mode {
            Some(gw::GatewayListenersTlsMode::Passthrough) => TlsMode::Passthrough,
            Some(gw::GatewayListenersTlsMode::Terminate) | None => TlsMode::Terminate,
        },
        certificate_refs: tls
            .certificate_refs
            .iter()
            .flatten()
            .map(|c| CertificateRef {
                group: c.group.clone().unwrap_or_default(),
                kind: c.kind.clone().unwrap_or_else(|| "Secret".to_string()),
                name: c.name.clone(),
                namespace: c.namespace.clone(),
            })
            .collect(),
    });
    let allowed = l.allowed_routes.clone().unwrap_or_default();
    let namespaces = allowed.namespaces.unwrap_or_default();
    let namespaces = match namespaces.from {
        Some(From::All) => RouteNamespaces::All,
        Some(From::Selector) => {
            let selector = namespaces.selector.unwrap_or_default();
            let match_expressions = selector
                .match_expressions
                .unwrap_or_default()
                .into_iter()
                .map(|e| {
                    let operator = match e.operator.as_str() {
                        "In" => LabelOperator::In,
                        "NotIn" => LabelOperator::NotIn,
                        "Exists" => LabelOperator::Exists,
                        "DoesNotExist" => LabelOperator::DoesNotExist,
                        other => {
                            return Err(format!(
                                "listener {:?}: selector operator {other:?} is not In, NotIn, Exists or DoesNotExist",
                                l.name
                            ));
                        }
                    };
                    Ok(LabelRequirement {
                        key: e.key,
                        operator,
                        values: e.values.unwrap_or_default(),
                    })
                })
                .collect::<Result<_, _>>()?;
            RouteNamespaces::Selector(LabelSelector {
                match_labels: selector.match_labels.unwrap_or_default(),
                match_expressions,
            })
        }
        Some(From::Same) | None => RouteNamespaces::Same,
    };
    let kinds = allowed
        .kinds
        .unwrap_or_default()
        .into_iter()
        .map(|k| RouteGroupKind {
            group: k.group.unwrap_or_else(|| GATEWAY_API_GROUP.to_string()),
            kind: k.kind,
        })
        .collect();
    Ok(Listener {
        name: l.name.clone(),
        port: l.port,
        protocol: l.protocol.clone(),
        hostname: l.hostname.clone().filter(|h| !h.is_empty()),
        tls,
        allowed_routes: AllowedRoutes { namespaces, kinds },
    })
}

impl FromK8s for ReferenceGrant {
    type K8s = grants::ReferenceGrant;

    fn from_k8s(obj: &grants::ReferenceGrant) -> Result<Self, ConvertError> {
        let key = namespaced_key(Kind::ReferenceGrant, &obj.metadata)?;
        Ok(ReferenceGrant {
            from: obj
                .spec
                .from
                .iter()
                .map(|f| GrantFrom {
                    group: f.group.clone(),
                    kind: f.kind.clone(),
                    namespace: f.namespace.clone(),
                })
                .collect(),
            to: obj
                .spec
                .to
                .iter()
                .map(|t| GrantTo {
                    group: t.group.clone(),
                    kind: t.kind.clone(),
                    name: t.name.clone().filter(|n| !n.is_empty()),
                })
                .collect(),
            key,
        })
    }
}

impl FromK8s for Namespace {
    type K8s = core::Namespace;

    /// Keeps the labels, adding the name label the API server always sets.
    fn from_k8s(obj: &core::Namespace) -> Result<Self, ConvertError> {
        let name = object_name(Kind::Namespace, &obj.metadata)?;
        let mut labels: BTreeMap<String, String> = obj.metadata.labels.clone().unwrap_or_default();
        labels.insert(NAMESPACE_NAME_LABEL.to_string(), name.clone());
        Ok(Namespace { name, labels })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn gateway_listeners() {
        let obj: gw::Gateway = serde_json::from_value(json!({
            "metadata": {"name": "gw", "namespace": "infra", "generation": 2},
            "spec": {"gatewayClassName": "hawser", "listeners": [
                {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "*.example.com",
                 "tls": {"certificateRefs": [{"name": "cert"}]},
                 "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {
                     "matchLabels": {"team": "a"},
                     "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}},
                     "kinds": [{"kind": "HTTPRoute"}]}},
                {"name": "tls", "port": 8443, "protocol": "TLS", "tls": {"mode": "Passthrough"}},
            ]},
        }))
        .expect("valid Gateway");
        let gateway = Gateway::from_k8s(&obj).expect("converts");
        assert_eq!(gateway.generation, Some(2));
        let https = &gateway.listeners[0];
        let tls = https.tls.as_ref().expect("tls");
        assert_eq!(tls.mode, TlsMode::Terminate);
        assert_eq!(tls.certificate_refs[0].kind, "Secret");
        assert_eq!(tls.certificate_refs[0].group, "");
        let RouteNamespaces::Selector(selector) = &https.allowed_routes.namespaces else {
            panic!("selector expected");
        };
        assert_eq!(selector.match_expressions[0].operator, LabelOperator::In);
        assert_eq!(https.allowed_routes.kinds[0].group, GATEWAY_API_GROUP);
        let passthrough = &gateway.listeners[1];
        assert_eq!(passthrough.allowed_routes.namespaces, RouteNamespaces::Same);
        assert_eq!(
            passthrough.tls.as_ref().map(|t| t.mode),
            Some(TlsMode::Passthrough)
        );
    }

    #[test]
    fn gateway_addresses_default_to_ip_addresses() {
        let obj: gw::Gateway = serde_json::from_value(json!({
            "metadata": {"name": "gw", "namespace": "infra"},
            "spec": {"gatewayClassName": "hawser", "listeners": [],
                "addresses": [{"value": "203.0.113.7"}, {"type": "Hostname"}]},
        }))
        .expect("valid Gateway");
        let gateway = Gateway::from_k8s(&obj).expect("converts");
        let addresses: Vec<(&str, &str)> = gateway
            .addresses
            .iter()
            .map(|a| (a.address_type.as_str(), a.value.as_str()))
            .collect();
        assert_eq!(addresses, [("IPAddress", "203.0.113.7"), ("Hostname", "")]);
    }

    #[test]
    fn namespaces_always_carry_their_name_label() {
        let obj: core::Namespace = serde_json::from_value(json!({
            "metadata": {"name": "app", "labels": {"team": "a"}},
        }))
        .expect("valid Namespace");
        let ns = Namespace::from_k8s(&obj).expect("converts");
        assert_eq!(
            ns.labels.get(NAMESPACE_NAME_LABEL).map(String::as_str),
            Some("app")
        );
        assert_eq!(ns.labels.len(), 2);
        assert_eq!(Namespace::named("app").labels.len(), 1);
    }
}
