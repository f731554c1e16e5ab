//! Map changes as runtime operations, by entry where that cannot be told
//! apart from one atomic change, in an order that never lets a route name
//! what is not there.
//!
//! ```text
//!  first: other maps' replacements, added and changed entries  (what routes name)
//!         route maps' replacements and changes:
//!           twinned (routes.map, gateway.map): edit the copy requests do not
//!           read, name it in live_twins.map, edit the other copy
//!  last:  route maps' removed entries
//!         other maps' removed entries                          (outlive the routes naming them)
//! ```
//!
//! A route map (`routes.map`, `routes_regex.map`, `gateway.map`) is where a
//! request's route is looked up; every other map is looked up by what a
//! route entry names (its feature set, its backend's spare). A feature's
//! entries are in place before a route names them, and removed only after
//! no route does, so a request never meets a route whose authentication or
//! limits are missing. (Each map changes by itself, by entry or replaced:
//! a request may meet one feature's new value beside another's old one, as
//! it could when every map was replaced whole.)
//!
//! A twinned map (see [`hawser_plan::MapPlan::twin`]) changes by entry in
//! the copy no request reads; one `set map` of `live_twins.map` then moves
//! every request to it at once, and the other copy follows. So requests,
//! and a hawser killed at any step, meet the old routes or the new ones,
//! never some of each (one route moved and another not yet).
//!
//! Within one `str` or `beg` map with unique keys (HAProxy indexes both as
//! trees, so entry order does not matter), added entries go longest key
//! first, then changed ones, and removed ones go shortest key first: at
//! every step each request finds the route it found before the change or
//! the one it finds after it, never a third (a shorter prefix added before
//! a longer one would take the longer one's requests for a moment). Other
//! maps (`reg`, looked up in file order), maps whose keys repeat and
//! changes of more than [`MAX_ENTRY_EDITS`] entries are replaced whole in
//! one transaction (a twinned map's two copies, one transaction each).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use hawser_plan::{
    GATEWAY_MAP_PATH, MapEntry, MapPlan, MatchKind, Plan, REGEX_ROUTES_MAP_PATH, ROUTES_MAP_PATH,
};

use super::{MapEdit, RuntimeOp};

/// Past this many changed entries a map is replaced whole: one transaction
/// then costs less than as many commands.
pub(super) const MAX_ENTRY_EDITS: usize = 64;

/// Where a request's route is looked up.
const ROUTE_MAPS: [&str; 3] = [ROUTES_MAP_PATH, REGEX_ROUTES_MAP_PATH, GATEWAY_MAP_PATH];

/// The operations of the changed maps: `first` before anything is
/// removed, `last` after.
#[derive(Debug, Default)]
pub(super) struct MapOps {
    pub first: Vec<RuntimeOp>,
    pub last: Vec<RuntimeOp>,
}

/// The operations that take the maps at `changed` (paths both versions
/// hold, with other contents) from `running` to `desired`.
pub(super) fn map_ops(changed: Vec<String>, running: &Plan, desired: &Plan) -> MapOps {
    let is_twin = |path: &String| {
        [running, desired]
            .iter()
            .any(|plan| plan.maps.iter().any(|m| m.twin.as_ref() == Some(path)))
    };
    // A twin changes with its map.
    let (routes, others): (Vec<String>, Vec<String>) = changed
        .into_iter()
        .filter(|path| !is_twin(path))
        .partition(|path| ROUTE_MAPS.contains(&path.as_str()));
    let change = |path: String| MapChange::of(path, running, desired);
    let routes: Vec<MapChange> = routes.into_iter().map(change).collect();
    let others: Vec<MapChange> = others.into_iter().map(change).collect();
    let mut ops = MapOps::default();
    for change in others.iter().chain(&routes) {
        ops.first.extend(change.first());
    }
    for change in routes.iter().chain(&others) {
        ops.last.extend(change.last());
    }
    ops
}

/// How one map changes.
enum MapChange {
    /// Each of these paths (a map and its twin) in one transaction.
    Replace(Vec<String>),
    Edits {
        path: String,
        /// Added entries, longest key first, then changed ones.
        first: Vec<MapEdit>,
        /// Removed entries, shortest key first.
        last: Vec<MapEdit>,
    },
    /// All the edits, in the copy requests do not read, then the other.
    TwinEdits {
        path: String,
        twin: String,
        edits: Vec<MapEdit>,
    },
}

impl MapChange {
    fn of(path: String, running: &Plan, desired: &Plan) -> MapChange {
        let old = running.maps.iter().find(|m| m.path == path);
        let new = desired.maps.iter().find(|m| m.path == path);
        let twin = new.and_then(|m| m.twin.clone());
        let edits = match (old, new) {
            (Some(old), Some(new)) if old.twin == new.twin => entry_edits(old, new),
            _ => None,
        };
        match (edits, twin) {
            (Some((mut first, last)), Some(twin)) => {
                first.extend(last);
                MapChange::TwinEdits {
                    path,
                    twin,
                    edits: first,
                }
            }
            (Some((first, last)), None) => MapChange::Edits { path, first, last },
            (None, twin) => MapChange::Replace([path].into_iter().chain(twin).collect()),
        }
    }

    fn first(&self) -> Vec<RuntimeOp> {
        match self {
            MapChange::Replace(paths) => paths
                .iter()
                .map(|path| RuntimeOp::ReplaceMap { path: path.clone() })
                .collect(),
            MapChange::Edits { path, first, .. } => edit_ops(path, first),
            MapChange::TwinEdits { path, twin, edits } => vec![RuntimeOp::EditTwinMap {
                path: path.clone(),
                twin: twin.clone(),
                edits: edits.clone(),
            }],
        }
    }

    fn last(&self) -> Vec<RuntimeOp> {
        match self {
            MapChange::Replace(_) | MapChange::TwinEdits { .. } => Vec::new(),
            MapChange::Edits { path, last, .. } => edit_ops(path, last),
        }
    }
}

/// One step of a twinned map's edits (see [`twin_steps`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TwinStep<'a> {
    /// An entry edit in the copy at `map`.
    Edit { map: &'a str, edit: &'a MapEdit },
    /// `set map` of `live_twins.map`: requests read `copy` from now on.
    Read { copy: &'a str },
}

/// The steps of `edits` to the map at `path` and its `twin` while requests
/// read the copy `read` (as `live_twins.map` names it): the other copy
/// edited, then read, then this one edited. One edit alone is seen whole
/// wherever it is made: the copy read is edited first, then the other, and
/// the change is live one round trip sooner (a crash between the two
/// leaves what the switch of copies leaves: the copy read new, the other
/// old). `None` when `read` is neither.
pub(crate) fn twin_steps<'a>(
    path: &'a str,
    twin: &'a str,
    read: Option<&str>,
    edits: &'a [MapEdit],
) -> Option<Vec<TwinStep<'a>>> {
    let (read, unread) = match read {
        Some(copy) if copy == path => (path, twin),
        Some(copy) if copy == twin => (twin, path),
        _ => return None,
    };
    let edit = |map: &'a str| edits.iter().map(move |edit| TwinStep::Edit { map, edit });
    if let [_] = edits {
        return Some(edit(read).chain(edit(unread)).collect());
    }
    Some(
        edit(unread)
            .chain([TwinStep::Read { copy: unread }])
            .chain(edit(read))
            .collect(),
    )
}

fn edit_ops(path: &str, edits: &[MapEdit]) -> Vec<RuntimeOp> {
    edits
        .iter()
        .map(|edit| RuntimeOp::EditMap {
            path: path.to_string(),
            edit: edit.clone(),
        })
        .collect()
}

/// The entry edits from `old` to `new`, split into those made first (added,
/// then changed) and those made last (removed); `None` when the map must be
/// replaced whole (see the module header).
fn entry_edits(old: &MapPlan, new: &MapPlan) -> Option<(Vec<MapEdit>, Vec<MapEdit>)> {
    let tree = matches!(new.match_kind, MatchKind::Str | MatchKind::Beg);
    if old.match_kind != new.match_kind || !tree {
        return None;
    }
    let changes = EntryChanges::walked(&old.entries, &new.entries)
        .or_else(|| EntryChanges::by_key(old, new))?;
    let edits = changes.count();
    // No edit while the file changed: the plan does not say how; replace.
    if edits == 0 || edits > MAX_ENTRY_EDITS {
        return None;
    }
    let EntryChanges {
        mut added,
        changed,
        mut removed,
    } = changes;
    added.sort_by(|(a, _), (b, _)| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    removed.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    let owned = |(key, value): (&str, &str)| (key.to_string(), value.to_string());
    let first = added
        .into_iter()
        .map(owned)
        .map(|(key, value)| MapEdit::Add { key, value })
        .chain(
            changed
                .into_iter()
                .map(owned)
                .map(|(key, value)| MapEdit::Set { key, value }),
        )
        .collect();
    let last = removed
        .into_iter()
        .map(|key| MapEdit::Del {
            key: key.to_string(),
        })
        .collect();
    Some((first, last))
}

/// What changed between two maps' entries, by key, borrowed.
#[derive(Debug, Default, PartialEq, Eq)]
struct EntryChanges<'a> {
    added: Vec<(&'a str, &'a str)>,
    changed: Vec<(&'a str, &'a str)>,
    removed: Vec<&'a str>,
}

impl<'a> EntryChanges<'a> {
    /// By walking both lists side by side, when both are in one of the
    /// orders the renderer writes maps in (longest key first, or by key),
    /// each key after the one before it: so no key repeats. `None` when
    /// they are not. Linear, without a copy: a route map of thousands of
    /// entries is compared on every change.
    fn walked(old: &'a [MapEntry], new: &'a [MapEntry]) -> Option<EntryChanges<'a>> {
        let orders: [fn(&str, &str) -> Ordering; 2] = [MapEntry::longest_first, str::cmp];
        let order = orders
            .into_iter()
            .find(|order| in_order(old, *order) && in_order(new, *order))?;
        let mut changes = EntryChanges::default();
        let (mut old, mut new) = (old.iter().peekable(), new.iter().peekable());
        loop {
            let before = match (old.peek(), new.peek()) {
                (None, None) => return Some(changes),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(was), Some(is)) => order(&was.key, &is.key),
            };
            match before {
                Ordering::Less => changes.removed.extend(old.next().map(|e| &*e.key)),
                Ordering::Greater => changes.added.extend(new.next().map(pair)),
                Ordering::Equal => {
                    let (was, is) = (old.next()?, new.next()?);
                    if was.value != is.value {
                        changes.changed.push(pair(is));
                    }
                }
            }
        }
    }

    /// By key, whatever the order; `None` when a key repeats.
    fn by_key(old: &'a MapPlan, new: &'a MapPlan) -> Option<EntryChanges<'a>> {
        let mut old = unique_entries(old)?;
        let new = unique_entries(new)?;
        let mut changes = EntryChanges::default();
        for (key, value) in new {
            match old.remove(key) {
                None => changes.added.push((key, value)),
                Some(was) if was != value => changes.changed.push((key, value)),
                Some(_) => {}
            }
        }
        changes.removed = old.into_keys().collect();
        Some(changes)
    }

    fn count(&self) -> usize {
        self.added.len() + self.changed.len() + self.removed.len()
    }
}

fn pair(entry: &MapEntry) -> (&str, &str) {
    (&*entry.key, &*entry.value)
}

/// Each key strictly after the one before it.
fn in_order(entries: &[MapEntry], order: fn(&str, &str) -> Ordering) -> bool {
    entries
        .windows(2)
        .all(|pair| order(&pair[0].key, &pair[1].key) == Ordering::Less)
}

/// The map's entries by key, borrowed; `None` when a key repeats.
fn unique_entries(map: &MapPlan) -> Option<BTreeMap<&str, &str>> {
    let entries: BTreeMap<&str, &str> = map.entries.iter().map(|e| (&*e.key, &*e.value)).collect();
    (entries.len() == map.entries.len()).then_some(entries)
}

#[cfg(test)]
mod tests;
