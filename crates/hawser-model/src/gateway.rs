//! GatewayClass and Gateway views (`gateway.networking.k8s.io/v1`), trimmed to
//! what listener programming and status need.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ObjectKey;

/// A GatewayClass: which controller implements the Gateways naming it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GatewayClass {
    pub name: String,
    /// `spec.controllerName`, e.g. `hawser.dev/gateway-controller`.
    pub controller_name: String,
    pub generation: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gateway {
    pub key: ObjectKey,
    pub generation: Option<i64>,
    /// RFC 3339; absent for local manifests.
    pub created: Option<String>,
    pub class_name: String,
    pub listeners: Vec<Listener>,
    /// `spec.addresses`: the addresses asked for (none: any will do).
    pub addresses: Vec<GatewayAddress>,
}

/// A `spec.addresses` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GatewayAddress {
    /// `IPAddress` (the default), `Hostname`, or an implementation-specific type.
    pub address_type: String,
    /// Empty asks for any address of that type.
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listener {
    pub name: String,
    /// As given; checked against 1..=65535 when the listener is programmed.
    pub port: i32,
    /// `HTTP`, `HTTPS`, `TLS`, `TCP`, `UDP` or an implementation-specific name.
    pub protocol: String,
    pub hostname: Option<String>,
    pub tls: Option<ListenerTls>,
    pub allowed_routes: AllowedRoutes,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListenerTls {
    pub mode: TlsMode,
    pub certificate_refs: Vec<CertificateRef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum TlsMode {
    Terminate,
    Passthrough,
}

/// A listener's `certificateRefs` entry; group and kind defaulted to a core Secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CertificateRef {
    /// `""` for the core group.
    pub group: String,
    pub kind: String,
    pub name: String,
    /// `None` means the Gateway's own namespace.
    pub namespace: Option<String>,
}

/// Which routes may attach to a listener.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AllowedRoutes {
    pub namespaces: RouteNamespaces,
    /// Empty means the kinds the listener's protocol supports.
    pub kinds: Vec<RouteGroupKind>,
}

impl Default for AllowedRoutes {
    fn default() -> Self {
        AllowedRoutes {
            namespaces: RouteNamespaces::Same,
            kinds: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum RouteNamespaces {
    /// Only the Gateway's namespace (the default).
    Same,
    All,
    /// Namespaces whose labels the selector matches.
    Selector(LabelSelector),
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RouteGroupKind {
    /// Defaults to `gateway.networking.k8s.io`.
    pub group: String,
    pub kind: String,
}

/// A Kubernetes label selector; an empty one matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<LabelRequirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelRequirement {
    pub key: String,
    pub operator: LabelOperator,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LabelOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl LabelSelector {
    /// Whether a set of labels satisfies every term.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let labels_match = self
            .match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v));
        labels_match
            && self.match_expressions.iter().all(|r| {
                let value = labels.get(&r.key);
                match r.operator {
                    LabelOperator::In => value.is_some_and(|v| r.values.contains(v)),
                    LabelOperator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
                    LabelOperator::Exists => value.is_some(),
                    LabelOperator::DoesNotExist => value.is_none(),
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_selectors() {
        let requirement = |key: &str, operator, values: &[&str]| LabelRequirement {
            key: key.to_string(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        let selector = LabelSelector {
            match_labels: labels(&[("team", "a")]),
            match_expressions: vec![
                requirement("env", LabelOperator::In, &["prod", "stage"]),
                requirement("legacy", LabelOperator::DoesNotExist, &[]),
            ],
        };
        assert!(selector.matches(&labels(&[("team", "a"), ("env", "prod")])));
        assert!(!selector.matches(&labels(&[("team", "b"), ("env", "prod")])));
        assert!(!selector.matches(&labels(&[("team", "a"), ("env", "dev")])));
        assert!(!selector.matches(&labels(&[("team", "a"), ("env", "prod"), ("legacy", "")])));
        assert!(LabelSelector::default().matches(&BTreeMap::new()));
        let not_in = LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![requirement("env", LabelOperator::NotIn, &["prod"])],
        };
        assert!(not_in.matches(&BTreeMap::new()));
        assert!(!not_in.matches(&labels(&[("env", "prod")])));
    }
}
