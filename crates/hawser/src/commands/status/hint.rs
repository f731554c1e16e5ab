//! What to look at when a route does not attach: the route's side and each
//! listener's side of the check that failed, from the objects themselves.

use hawser_model::{Gateway, Kind, ObjectRef, ParentRef, RouteMeta, RouteNamespaces, Store};

/// Lines explaining an `Accepted=False` `reason` for `route` on `parent`;
/// none when the reason's message says it all.
pub fn unattached(
    store: &Store,
    route: &ObjectRef,
    parent: &ParentRef,
    reason: &str,
) -> Vec<String> {
    let Some(gateway) = store.gateway(&parent.key(&route.key.namespace)) else {
        return Vec::new();
    };
    match reason {
        "NoMatchingListenerHostname" => {
            let hostnames = meta_of(store, route).map_or_else(Vec::new, |m| m.hostnames.clone());
            let mut lines = vec![format!(
                "route hostnames: {}",
                if hostnames.is_empty() {
                    "any".to_string()
                } else {
                    hostnames.join(", ")
                }
            )];
            lines.extend(listeners(gateway, parent).map(|l| {
                format!(
                    "listener {} hostname: {}",
                    l.name,
                    l.hostname.as_deref().unwrap_or("any")
                )
            }));
            lines
        }
        "NotAllowedByListeners" => listeners(gateway, parent)
            .map(|l| {
                let from = match &l.allowed_routes.namespaces {
                    RouteNamespaces::Same => {
                        format!("Same (only namespace {:?})", gateway.key.namespace)
                    }
                    RouteNamespaces::All => "All".to_string(),
                    RouteNamespaces::Selector(_) => {
                        "Selector (namespaces whose labels match)".to_string()
                    }
                };
                let kinds: Vec<&str> = l
                    .allowed_routes
                    .kinds
                    .iter()
                    .map(|k| k.kind.as_str())
                    .collect();
                let kinds = if kinds.is_empty() {
                    "its protocol's".to_string()
                } else {
                    kinds.join(", ")
                };
                format!(
                    "listener {} allows routes from namespaces: {from}; kinds: {kinds}",
                    l.name
                )
            })
            .collect(),
        "NoMatchingParent" => {
            let names: Vec<String> = gateway
                .listeners
                .iter()
                .map(|l| format!("{} (port {})", l.name, l.port))
                .collect();
            vec![format!(
                "Gateway {} has listeners: {}",
                gateway.key,
                names.join(", ")
            )]
        }
        _ => Vec::new(),
    }
}

/// The listeners `parent` names (by sectionName and port), or all.
fn listeners<'a>(
    gateway: &'a Gateway,
    parent: &'a ParentRef,
) -> impl Iterator<Item = &'a hawser_model::Listener> {
    gateway.listeners.iter().filter(|l| {
        parent.section_name.as_ref().is_none_or(|s| *s == l.name)
            && parent.port.is_none_or(|p| p == l.port)
    })
}

fn meta_of<'a>(store: &'a Store, route: &ObjectRef) -> Option<&'a RouteMeta> {
    let key = &route.key;
    match route.kind {
        Kind::HttpRoute => store.http_routes().map(|r| &r.meta).find(|m| &m.key == key),
        Kind::GrpcRoute => store.grpc_routes().map(|r| &r.meta).find(|m| &m.key == key),
        Kind::TlsRoute => store.tls_routes().map(|r| &r.meta).find(|m| &m.key == key),
        Kind::TcpRoute => store.tcp_routes().map(|r| &r.meta).find(|m| &m.key == key),
        _ => None,
    }
}
