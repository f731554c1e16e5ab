//! The routes map's entries (exact and prefix routes in one map, longest
//! key first), made from the routing table, or patched by the keys a patch
//! of the table touched.
//!
//! At thousands of routes, making every entry again (its value written,
//! then all sorted) was most of a one-Ingress change's render. A patched
//! table says which keys its patch took out or put in (`kept.rs`): only
//! those entries can differ, since an entry is a function of its key and
//! of the target the table holds for it. The patch finds each by binary
//! search in the longest-first order and replaces, removes or inserts it;
//! the incremental tests compare every byte with a render from nothing.

use std::collections::BTreeSet;

use hawser_plan::MapEntry;

use super::{RouteMap, RouteTable, Target};
use crate::route_key::ROUTE_KEY_END;

/// Every entry of `table`'s routes map, longest key first.
pub(crate) fn entries(table: &RouteTable) -> Vec<MapEntry> {
    let mut entries: Vec<MapEntry> = (table.exact.iter())
        .map(|(key, target)| entry(RouteMap::Exact, key, target))
        .chain((table.prefix.iter()).map(|(key, target)| entry(RouteMap::Prefix, key, target)))
        .collect();
    // No two keys are alike (an exact key ends in ROUTE_KEY_END, a prefix
    // key in '/'), so an unstable sort gives the one order.
    entries.sort_unstable_by(|a, b| MapEntry::longest_first(&a.key, &b.key));
    entries
}

/// Makes `entries`, the routes map of a table before a patch, that of
/// `table` after it, where the patch touched (took out or put in) only the
/// keys `touched`.
pub(crate) fn patch(
    entries: &mut Vec<MapEntry>,
    table: &RouteTable,
    touched: &BTreeSet<(RouteMap, String)>,
) {
    for (map, key) in touched {
        let now = match map {
            RouteMap::Exact | RouteMap::Prefix => table.claims(*map).get(key),
            RouteMap::Regex => continue, // another map
        };
        let map_key = map_key(*map, key);
        let at = entries.binary_search_by(|e| MapEntry::longest_first(&e.key, &map_key));
        match (at, now) {
            (Ok(at), Some(target)) => entries[at].value = target.map_value().into(),
            (Ok(at), None) => {
                entries.remove(at);
            }
            (Err(at), Some(target)) => {
                entries.insert(at, MapEntry::new(map_key, target.map_value()));
            }
            (Err(_), None) => {}
        }
    }
}

fn entry(map: RouteMap, key: &str, target: &Target) -> MapEntry {
    MapEntry::new(map_key(map, key), target.map_value())
}

/// An exact route's key ends in [`ROUTE_KEY_END`]; a prefix key is its own.
fn map_key(map: RouteMap, key: &str) -> String {
    let mut map_key = String::with_capacity(key.len() + 1);
    map_key.push_str(key);
    if map == RouteMap::Exact {
        map_key.push(ROUTE_KEY_END);
    }
    map_key
}
