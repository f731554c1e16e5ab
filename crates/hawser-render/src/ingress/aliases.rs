//! More names for an Ingress's routes: `server-alias` (its routes again
//! under other hosts) and `from-to-www-redirect` (the other name of each
//! host redirected to it). Both give way where a route serves the name
//! itself, so they run once every Ingress's own routes are in.

use std::sync::Arc;

use hawser_model::{Ingress, ObjectRef, PathType};

use super::{Route, RouteTable, Target, regex, route_keys};
use crate::features::{self, IngressFeatures};
use crate::report::Diagnostics;

/// The routes of `ingress` again for each of its `aliases` (`server-alias`),
/// with their index in the Ingress.
pub(super) fn alias_routes(
    ingress: &Ingress,
    routes: &[Route],
    aliases: &[String],
) -> Vec<(usize, Route)> {
    let mut copies = Vec::new();
    for alias in aliases {
        for (index, route) in routes.iter().enumerate() {
            if route.host.is_empty() {
                continue; // a rule for any host covers the alias already
            }
            copies.push((
                index,
                Route {
                    host: alias.clone(),
                    path: route.path.clone(),
                    path_type: route.path_type,
                    backend: route.backend.clone(),
                    tls_host: features::is_tls_host(alias, ingress),
                    regex: route.regex,
                },
            ));
        }
    }
    copies
}

/// An Ingress's routes for its aliases: only where no Ingress serves that
/// host and path itself (ingress-nginx: an alias never takes a host
/// another server has).
pub(super) fn add_alias_routes(
    table: &mut RouteTable,
    object: &Arc<ObjectRef>,
    routes: Vec<(usize, Route)>,
    key: &str,
    features: &IngressFeatures,
    diags: &mut Diagnostics,
) {
    for (index, route) in routes {
        let feature_set = features.set_id(key, route.tls_host);
        let rewrite = features
            .rewrite_target
            .as_ref()
            .and(feature_set.as_ref())
            .map(|_| index);
        for (map, entry) in route_keys(&route) {
            let targets = table.claims_mut(map);
            if let Some(existing) = targets.get(&entry) {
                if existing.owner != *object {
                    diags.warn(
                        object,
                        format!(
                            "alias route {entry:?} is served by {}; the alias gives way",
                            existing.owner
                        ),
                    );
                }
                continue;
            }
            targets.insert(
                entry,
                Target {
                    backend: route.backend.name().into(),
                    features: feature_set.clone(),
                    exact_type: route.path_type == PathType::Exact,
                    owner: Arc::clone(object),
                    rewrite,
                    canary: None,
                },
            );
        }
    }
}

/// ingress-nginx's `from-to-www-redirect`: for each host, the other name
/// (`www.` added or taken away) redirects to it, unless a route serves that
/// name itself.
pub(super) fn add_www_redirects(
    table: &mut RouteTable,
    object: &ObjectRef,
    hosts: Vec<String>,
    diags: &mut Diagnostics,
) {
    for host in hosts.into_iter().filter(|h| !h.starts_with("*.")) {
        let other = match host.strip_prefix("www.") {
            Some(bare) => bare.to_string(),
            None => format!("www.{host}"),
        };
        let regex_host = regex::regex_key(&other, "");
        let regex_host = regex_host.trim_end_matches("(?i:)");
        let served = [&table.exact, &table.prefix].iter().any(|map| {
            map.keys().any(|key| {
                key.strip_prefix(other.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            })
        }) || table.regex.keys().any(|key| key.starts_with(regex_host));
        if served {
            diags.warn(
                object,
                format!("{other} is served by a route; it is not redirected to {host}"),
            );
            continue;
        }
        table.www_redirects.entry(other).or_insert(host);
    }
}
