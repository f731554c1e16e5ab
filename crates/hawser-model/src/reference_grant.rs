//! ReferenceGrant view (`gateway.networking.k8s.io/v1beta1`, also `v1`) and the
//! Namespace view (`v1`) that `allowedRoutes` selectors read.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ObjectKey;

/// The label the API server puts on every Namespace, naming it.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Lets objects of the `from` kinds in the `from` namespaces refer to objects
/// of the `to` kinds in the grant's own namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReferenceGrant {
    pub key: ObjectKey,
    pub from: Vec<GrantFrom>,
    pub to: Vec<GrantTo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantFrom {
    /// `""` for the core group.
    pub group: String,
    pub kind: String,
    pub namespace: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantTo {
    /// `""` for the core group.
    pub group: String,
    pub kind: String,
    /// `None` grants every object of the kind.
    pub name: Option<String>,
}

/// A Namespace's name and labels (with [`NAMESPACE_NAME_LABEL`] always set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Namespace {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

impl Namespace {
    /// A namespace known only by name: the labels the API server would give it.
    pub fn named(name: &str) -> Self {
        let labels = BTreeMap::from([(NAMESPACE_NAME_LABEL.to_string(), name.to_string())]);
        Namespace {
            name: name.to_string(),
            labels,
        }
    }
}
