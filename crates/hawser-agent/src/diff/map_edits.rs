//! Map changes as runtime operations, by entry where that cannot be told
//! apart from one atomic change, in an order that never lets a route name
//! what is not there.
//!
//! ```text
//!  first: other maps' replacements, added and changed entries  (what routes name)
//!         route maps' replacements, added and changed entries
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
//! Within one `str` or `beg` map with unique keys (HAProxy indexes both as
//! trees, so entry order does not matter), added entries go longest key
//! first, then changed ones, and removed ones go shortest key first: at
//! every step each request finds the route it found before the change or
//! the one it finds after it, never a third (a shorter prefix added before
//! a longer one would take the longer one's requests for a moment). Other
//! maps (`reg`, looked up in file order), maps whose keys repeat and
//! changes of more than [`MAX_ENTRY_EDITS`] entries are replaced whole in
//! one transaction.

use std::collections::BTreeMap;

use hawser_plan::{
    GATEWAY_MAP_PATH, MapPlan, MatchKind, Plan, REGEX_ROUTES_MAP_PATH, ROUTES_MAP_PATH,
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
    let (routes, others): (Vec<String>, Vec<String>) = changed
        .into_iter()
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
    Replace(String),
    Edits {
        path: String,
        /// Added entries, longest key first, then changed ones.
        first: Vec<MapEdit>,
        /// Removed entries, shortest key first.
        last: Vec<MapEdit>,
    },
}

impl MapChange {
    fn of(path: String, running: &Plan, desired: &Plan) -> MapChange {
        let old = running.maps.iter().find(|m| m.path == path);
        let new = desired.maps.iter().find(|m| m.path == path);
        match (old, new) {
            (Some(old), Some(new)) => match entry_edits(old, new) {
                Some((first, last)) => MapChange::Edits { path, first, last },
                None => MapChange::Replace(path),
            },
            _ => MapChange::Replace(path),
        }
    }

    fn first(&self) -> Vec<RuntimeOp> {
        match self {
            MapChange::Replace(path) => vec![RuntimeOp::ReplaceMap { path: path.clone() }],
            MapChange::Edits { path, first, .. } => edit_ops(path, first),
        }
    }

    fn last(&self) -> Vec<RuntimeOp> {
        match self {
            MapChange::Replace(_) => Vec::new(),
            MapChange::Edits { path, last, .. } => edit_ops(path, last),
        }
    }
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
    let mut old = unique_entries(old)?;
    let new = unique_entries(new)?;
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for (key, value) in new {
        match old.remove(key) {
            None => added.push((key, value)),
            Some(was) if was != value => changed.push((key, value)),
            Some(_) => {}
        }
    }
    let mut removed: Vec<&str> = old.into_keys().collect();
    let edits = added.len() + changed.len() + removed.len();
    // No edit while the file changed: the plan does not say how; replace.
    if edits == 0 || edits > MAX_ENTRY_EDITS {
        return None;
    }
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

/// The map's entries by key, borrowed; `None` when a key repeats.
fn unique_entries(map: &MapPlan) -> Option<BTreeMap<&str, &str>> {
    let entries: BTreeMap<&str, &str> = map
        .entries
        .iter()
        .map(|e| (e.key.as_str(), e.value.as_str()))
        .collect();
    (entries.len() == map.entries.len()).then_some(entries)
}

#[cfg(test)]
mod tests;
