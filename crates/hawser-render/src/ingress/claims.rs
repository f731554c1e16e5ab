//! Who keeps a routing-map key two routes claim: the first claim (the
//! older Ingress, see `route_table`), except that an Exact path outranks a
//! Prefix one at the same path. A lost claim to another backend is a
//! warning on the route that lost. Either returns the key when another
//! route had claimed it already: a key claimed twice is contested (see
//! `RouteTable::contested`).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use super::Target;
use crate::report::Diagnostics;

/// An Exact entry replaces a Prefix one for the same key; otherwise the first claim stays.
pub(super) fn claim_exact(
    map: &mut BTreeMap<String, Target>,
    key: String,
    target: Target,
    diags: &mut Diagnostics,
) -> Option<String> {
    // One search of the map per entry: its keys are compared as strings.
    match map.entry(key) {
        Entry::Vacant(vacant) => {
            vacant.insert(target);
            None
        }
        Entry::Occupied(mut taken) => {
            match (target.exact_type, taken.get().exact_type) {
                (true, false) => {
                    taken.insert(target);
                }
                // An Exact path outranks this prefix at the same path; not a conflict.
                (false, true) => {}
                _ => conflict(taken.key(), taken.get(), &target, diags),
            }
            Some(taken.key().clone())
        }
    }
}

pub(super) fn claim(
    map: &mut BTreeMap<String, Target>,
    key: String,
    target: Target,
    diags: &mut Diagnostics,
) -> Option<String> {
    match map.entry(key) {
        Entry::Vacant(vacant) => {
            vacant.insert(target);
            None
        }
        Entry::Occupied(taken) => {
            conflict(taken.key(), taken.get(), &target, diags);
            Some(taken.key().clone())
        }
    }
}

/// `target` claims `key`, which `existing` holds: the first claim stays.
fn conflict(key: &str, existing: &Target, target: &Target, diags: &mut Diagnostics) {
    if existing.backend == target.backend {
        return;
    }
    let message = if existing.owner == target.owner {
        format!("route {key:?} is given twice; the first one is served")
    } else {
        format!(
            "route {key:?} is already claimed by older {}; that one is served",
            existing.owner
        )
    };
    diags.warn(&target.owner, message);
}
