//! The routing table kept from the last render, patched by the Ingresses
//! that changed since instead of made again from every Ingress.
//!
//! ```text
//! render start ── take ──▶ last table ── patched by each Ingress changed ──▶ table
//!                               └── cannot be patched: made from every Ingress ──▶ table
//! render end   ◀── keep ── the table, what making it reported, its routes map, the store it is of
//! ```
//!
//! The table is a fold of the Ingresses served, in claim order
//! (`route_table`). An Ingress's *part* is the table it makes alone. A
//! patch takes out the part of each changed Ingress as it was in the last
//! store and puts in its part in this one. That gives the table made from
//! every Ingress when no part depends on another or on the order of the
//! fold, which is checked for each change (else the table is made again):
//!
//! - nothing else the routes are read with changed: no IngressClass, and
//!   no Secret or Service when some Ingress's routes read one
//!   (`RouteTable::reads_secrets`, `reads_services`);
//! - no Ingress's routes depend on others' (`RouteTable::cross_ingress`:
//!   canaries, aliases, www redirects, host-wide regex matching), and
//!   neither part holds anything the first to ask for keeps (a default
//!   backend, passthrough hosts), anything kept in claim order (rewrites),
//!   CA files, or a key it claims twice;
//! - each key the old part claims is held by it and was claimed by no one
//!   else (not `RouteTable::contested`), and each key the new part claims
//!   is free once those are out: no claim is won or lost, so no other
//!   route and no warning about a conflict changes;
//! - a backend's uses are counted: its first referrer stays, unless that
//!   is the Ingress taken out while others still use it (made again), and
//!   the Ingress put in becomes it when it comes first in claim order;
//! - a TLS Secret's use is a union over the Ingresses naming it, made
//!   again from their `tls` for each Secret either part names, unless a
//!   host of it asks clients for a certificate (the CA is a feature of
//!   its Ingress's, which only a full make reads);
//! - what a changed Ingress's part reports is all that the table reports
//!   about that Ingress: it replaces what was reported about it.
//!
//! The changed Ingresses and the kinds that changed are found by the
//! store's shared nodes (`Store::ingress_changes`, `Store::shares`), which
//! the copy of the last store kept here makes sound: its nodes stay alive,
//! so a node shared is the same node, never a new one in reused memory.
//!
//! More than [`PATCH_LIMIT`] changed Ingresses make the table again too. A
//! render after only Services, EndpointSlices or Gateway API objects
//! changed finds no Ingress changed and takes the table as it is. The
//! incremental tests render after many random changes with a kept table and
//! with a new renderer, and compare every byte.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use hawser_model::{Ingress, Kind, ObjectKey, ObjectRef, Store};
use hawser_plan::MapEntry;

use super::{
    RouteMap, RouteTable, TlsUse, add_tls_hosts, claim_order, features_key, owned, route_table,
    routes_map, table_of,
};
use crate::config::Settings;
use crate::report::{Diagnostic, Diagnostics};

/// More Ingresses changed than this since the last render: the table is
/// made again (a patch costs two small tables per change).
pub(crate) const PATCH_LIMIT: usize = 64;

const ROUTE_MAPS: [RouteMap; 3] = [RouteMap::Exact, RouteMap::Prefix, RouteMap::Regex];

/// The table of the last render, behind a lock: renders may run on
/// several threads with one renderer (the others make theirs anew).
#[derive(Default)]
pub(crate) struct KeptRoutes {
    last: Mutex<Option<Kept>>,
}

struct Kept {
    /// The store the routing is of (a copy shares its maps).
    store: Store,
    routing: Routing,
}

/// A routing table, what making it reported, and its routes map's entries.
pub(crate) struct Routing {
    pub table: RouteTable,
    /// What making the table reported, as reported.
    pub reported: Vec<Diagnostic>,
    /// The table's routes map, patched with it (`routes_map.rs`).
    pub routes_map: Vec<MapEntry>,
    /// The table's backends are the last render's: the same keys, each
    /// with the same first referrer (a patch that added, removed or
    /// re-attributed none). False for a table made anew.
    pub backends_kept: bool,
}

impl KeptRoutes {
    /// The routing table of `store`, what making it reported and its
    /// routes map: the kept ones patched when they can be, else made from
    /// every Ingress.
    pub(crate) fn route_table(&self, store: &Store, settings: &Settings) -> Routing {
        let last = self.last.lock().ok().and_then(|mut last| last.take());
        if let Some(mut kept) = last
            && let Some(Patched {
                touched,
                backends_kept,
            }) = patch(&mut kept, store, settings)
        {
            let routing = &mut kept.routing;
            routes_map::patch(&mut routing.routes_map, &routing.table, &touched);
            routing.backends_kept = backends_kept;
            return kept.routing;
        }
        let mut diags = Diagnostics::default();
        let table = route_table(store, settings, &mut diags);
        Routing {
            routes_map: routes_map::entries(&table),
            table,
            reported: diags.into_reported(),
            backends_kept: false,
        }
    }

    /// Keeps the routing of `store` for the next render.
    pub(crate) fn keep(&self, routing: Routing, store: &Store) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some(Kept {
                store: store.clone(),
                routing,
            });
        }
    }
}

impl std::fmt::Debug for KeptRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.last.lock().is_ok_and(|last| last.is_some());
        f.debug_struct("KeptRoutes").field("kept", &kept).finish()
    }
}

/// What a patch changed.
struct Patched {
    /// The route keys it took out or put in.
    touched: BTreeSet<(RouteMap, String)>,
    /// No backend was added, removed or given another first referrer.
    backends_kept: bool,
}

/// Makes `kept` the table of `store`, and says what it changed; none when
/// it cannot be patched (then it is left half patched, to be dropped).
fn patch(kept: &mut Kept, store: &Store, settings: &Settings) -> Option<Patched> {
    let (table, last) = (&kept.routing.table, &kept.store);
    let unchanged = |kind| last.shares(store, kind);
    let read_unchanged = unchanged(Kind::IngressClass)
        && (!table.reads_secrets || unchanged(Kind::Secret))
        && (!table.reads_services || unchanged(Kind::Service));
    if table.cross_ingress || !read_unchanged {
        return None;
    }
    let changed = kept.store.ingress_changes(store, PATCH_LIMIT)?;
    let mut secrets = BTreeSet::new();
    let mut touched = BTreeSet::new();
    let mut backends_kept = true;
    for key in &changed {
        let old = Part::of(kept.store.ingress(key), &kept.store, settings)?;
        let new = Part::of(store.ingress(key), store, settings)?;
        let object = ObjectRef::new(Kind::Ingress, key.clone());
        for map in ROUTE_MAPS {
            let keys = old
                .table
                .claims(map)
                .keys()
                .chain(new.table.claims(map).keys());
            touched.extend(keys.map(|key| (map, key.clone())));
        }
        secrets.extend(old.table.tls.keys().cloned());
        secrets.extend(new.table.tls.keys().cloned());
        backends_kept &= replace(
            &mut kept.routing.table,
            &object,
            &old.table,
            new.table,
            store,
            &changed,
        )?;
        kept.routing.reported.retain(|d| d.object != object);
        kept.routing.reported.extend(new.reported);
    }
    for secret in secrets {
        remake_tls_use(&mut kept.routing.table, secret, store)?;
    }
    kept.store = store.clone();
    Some(Patched {
        touched,
        backends_kept,
    })
}

/// What one Ingress puts in the table, made alone.
struct Part {
    table: RouteTable,
    reported: Vec<Diagnostic>,
}

impl Part {
    /// The part of `ingress` (none: an Ingress not in the store puts in
    /// nothing); none when it depends on others or on claim order.
    fn of(ingress: Option<&Ingress>, store: &Store, settings: &Settings) -> Option<Part> {
        let mut diags = Diagnostics::default();
        let owned = owned(ingress.into_iter(), store, settings, &mut diags);
        let table = table_of(owned, store, settings, &mut diags);
        let alone = !table.cross_ingress
            && table.contested.is_empty()
            && table.default_backend.is_none()
            && table.passthrough.is_empty()
            && table.rewrites.is_empty()
            && table.ca_files.is_empty()
            && table.tls.values().all(|usage| usage.client_ca.is_empty());
        alone.then(|| Part {
            table,
            reported: diags.into_reported(),
        })
    }
}

/// Takes `old`, the part of `object` in `table`, out of it and puts `new`
/// in; none when a claim, or a backend's first referrer, would change.
/// Says whether the table's backends stayed as they were: no backend
/// added, removed or first used by another.
fn replace(
    table: &mut RouteTable,
    object: &ObjectRef,
    old: &RouteTable,
    mut new: RouteTable,
    store: &Store,
    changed: &[ObjectKey],
) -> Option<bool> {
    for map in ROUTE_MAPS {
        let held_alone = |key: &String| {
            table
                .claims(map)
                .get(key)
                .is_some_and(|target| *target.owner == *object)
                && (table.contested.is_empty() || !table.contested.contains(&(map, key.clone())))
        };
        if !old.claims(map).keys().all(held_alone) {
            return None;
        }
        let free = |key: &String| {
            !table.claims(map).contains_key(key) || old.claims(map).contains_key(key)
        };
        if !new.claims(map).keys().all(free) {
            return None;
        }
    }
    for map in ROUTE_MAPS {
        // Entry by entry: `append` would rebuild the whole map.
        let claims = table.claims_mut(map);
        for key in old.claims(map).keys() {
            claims.remove(key);
        }
        claims.extend(std::mem::take(new.claims_mut(map)));
    }

    // Backends whose last use left, with who used them first: unless the
    // new part uses them again, first by the same object, they are gone.
    let mut backends_kept = true;
    let mut gone = BTreeMap::new();
    for (backend, uses) in &old.backends {
        let referrers = table.backends.get_mut(backend)?;
        referrers.uses = referrers.uses.checked_sub(uses.uses)?;
        if referrers.uses == 0 {
            let left = table.backends.remove(backend)?;
            gone.insert(backend.clone(), left.first);
        } else if referrers.first == *object {
            return None; // who uses it first now is not kept
        }
    }
    for (backend, uses) in new.backends {
        match table.backends.entry(backend) {
            Entry::Vacant(vacant) => {
                let back = gone.remove(vacant.key());
                backends_kept &= back.is_some_and(|first| first == uses.first);
                vacant.insert(uses);
            }
            Entry::Occupied(mut occupied) => {
                let referrers = occupied.get_mut();
                referrers.uses += uses.uses;
                let first = &referrers.first;
                if first.kind != Kind::Ingress || changed.contains(&first.key) {
                    return None;
                }
                let ingress = store.ingress(&object.key)?;
                if claim_order(ingress, store.ingress(&first.key)?).is_lt() {
                    referrers.first = object.clone();
                    backends_kept = false;
                }
            }
        }
    }

    backends_kept &= gone.is_empty();

    table.reads_secrets |= new.reads_secrets;
    table.reads_services |= new.reads_services;
    table.features.remove(&features_key(&object.key));
    table.features.extend(new.features);

    for secret in old.tls.keys() {
        table.tls.get_mut(secret)?.referrers.remove(object);
    }
    for secret in new.tls.into_keys() {
        let usage = table.tls.entry(secret).or_default();
        usage.referrers.insert(object.clone());
    }
    Some(backends_kept)
}

/// Makes the use of `secret` again from the Ingresses naming it; none when
/// a host of it asks clients for a certificate.
fn remake_tls_use(table: &mut RouteTable, secret: ObjectKey, store: &Store) -> Option<()> {
    let Some(kept) = table.tls.remove(&secret) else {
        return Some(());
    };
    if !kept.client_ca.is_empty() {
        return None;
    }
    if kept.referrers.is_empty() {
        return Some(());
    }
    let mut usage = TlsUse::default();
    for referrer in &kept.referrers {
        let ingress = store.ingress(&referrer.key)?;
        if ingress.key.namespace != secret.namespace {
            return None; // never: an Ingress names Secrets of its own namespace
        }
        let naming = ingress
            .tls
            .iter()
            .filter(|tls| tls.secret_name.as_deref() == Some(secret.name.as_str()));
        for tls in naming {
            add_tls_hosts(&mut usage, tls, None);
        }
    }
    usage.referrers = kept.referrers;
    table.tls.insert(secret, usage);
    Some(())
}

#[cfg(test)]
mod tests;
