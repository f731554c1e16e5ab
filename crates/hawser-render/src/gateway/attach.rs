//! Attachment: which listeners of a Gateway a route's parentRef lands on,
//! and with which hostnames, or the spec's reason it does not attach.

use hawser_model::{
    GATEWAY_API_GROUP, Gateway, Kind, Namespace, ParentRef, RouteMeta, RouteNamespaces, Store,
};

use super::hostname;
use super::listeners::ListenerState;

/// A parentRef's listeners and the hostnames served on each.
pub(super) type Attachment = Vec<(usize, Vec<Option<String>>)>;

/// Why a parentRef does not attach: an `Accepted` False reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub reason: &'static str,
    pub message: String,
}

pub(super) fn attach(
    store: &Store,
    route_kind: Kind,
    route: &RouteMeta,
    parent: &ParentRef,
    gateway: &Gateway,
    listeners: &[ListenerState<'_>],
) -> Result<Attachment, Refusal> {
    let refuse = |reason, message: String| Refusal { reason, message };
    let named: Vec<usize> = listeners
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            parent
                .section_name
                .as_deref()
                .is_none_or(|name| s.listener.name == name)
                && parent.port.is_none_or(|port| s.listener.port == port)
        })
        .map(|(i, _)| i)
        .collect();
    if named.is_empty() {
        return Err(refuse("NoMatchingParent", describe_missing(parent)));
    }
    let live: Vec<usize> = named
        .into_iter()
        .filter(|&i| listeners[i].entry.is_some())
        .collect();
    if live.is_empty() {
        return Err(refuse(
            "NoMatchingParent",
            "the listeners it names are not programmed".to_string(),
        ));
    }
    let allowed: Vec<usize> = live
        .into_iter()
        .filter(|&i| {
            allows(
                store,
                gateway,
                &listeners[i],
                route_kind,
                &route.key.namespace,
            )
        })
        .collect();
    if allowed.is_empty() {
        return Err(refuse(
            "NotAllowedByListeners",
            format!(
                "no listener allows {}s from namespace {:?}",
                route_kind, route.key.namespace
            ),
        ));
    }
    let attachment: Attachment = allowed
        .into_iter()
        .filter_map(|i| {
            let hostname = listeners[i].listener.hostname.as_deref();
            let hosts = hostname::intersect(hostname, &route.hostnames);
            (!hosts.is_empty()).then_some((i, hosts))
        })
        .collect();
    if attachment.is_empty() {
        return Err(refuse(
            "NoMatchingListenerHostname",
            "no hostname of the route intersects a listener's hostname".to_string(),
        ));
    }
    Ok(attachment)
}

fn describe_missing(parent: &ParentRef) -> String {
    match (&parent.section_name, parent.port) {
        (Some(name), Some(port)) => format!("the Gateway has no listener {name:?} on port {port}"),
        (Some(name), None) => format!("the Gateway has no listener {name:?}"),
        (None, Some(port)) => format!("the Gateway has no listener on port {port}"),
        (None, None) => "the Gateway has no listeners".to_string(),
    }
}

/// `allowedRoutes`: the route's kind, and its namespace.
fn allows(
    store: &Store,
    gateway: &Gateway,
    state: &ListenerState<'_>,
    route_kind: Kind,
    route_namespace: &str,
) -> bool {
    let kind_ok = state
        .supported_kinds
        .iter()
        .any(|k| k.group == GATEWAY_API_GROUP && k.kind == route_kind.as_str());
    kind_ok
        && match &state.listener.allowed_routes.namespaces {
            RouteNamespaces::Same => route_namespace == gateway.key.namespace,
            RouteNamespaces::All => true,
            RouteNamespaces::Selector(selector) => {
                let named;
                let namespace = match store.namespace(route_namespace) {
                    Some(namespace) => namespace,
                    None => {
                        named = Namespace::named(route_namespace);
                        &named
                    }
                };
                selector.matches(&namespace.labels)
            }
        }
}
