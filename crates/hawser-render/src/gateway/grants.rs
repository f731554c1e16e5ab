//! ReferenceGrant checks: may an object in one namespace refer to one in another?

use hawser_model::{GATEWAY_API_GROUP, Kind, Store};

/// A reference from a Gateway API object to an object in another namespace.
pub(super) struct CrossReference<'a> {
    pub from_kind: Kind,
    pub from_namespace: &'a str,
    /// Core kinds only (`Service`, `Secret`).
    pub to_kind: &'static str,
    pub to_namespace: &'a str,
    pub to_name: &'a str,
}

/// Same-namespace references need no grant; others need a ReferenceGrant in
/// the target's namespace naming the source kind and namespace, and the
/// target kind (all of it, or the target by name).
pub(super) fn permitted(store: &Store, reference: &CrossReference<'_>) -> bool {
    if reference.from_namespace == reference.to_namespace {
        return true;
    }
    let core = |group: &str| group.is_empty() || group == "core";
    store
        .reference_grants_in(reference.to_namespace)
        .any(|grant| {
            let from = grant.from.iter().any(|f| {
                f.group == GATEWAY_API_GROUP
                    && f.kind == reference.from_kind.as_str()
                    && f.namespace == reference.from_namespace
            });
            let to = grant.to.iter().any(|t| {
                core(&t.group)
                    && t.kind == reference.to_kind
                    && t.name.as_deref().is_none_or(|n| n == reference.to_name)
            });
            from && to
        })
}
