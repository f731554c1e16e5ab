//! The order of map edits, checked against a model of HAProxy's lookups:
//! at every step between two versions, each request finds the route it
//! finds in one of them, and that route's feature set in place, with its
//! value of one of them; and a twinned route map is read whole, in one
//! version or the other.

use std::collections::BTreeMap;

use hawser_plan::{MapEntry, MapPlan, MatchKind, Plan, ROUTES_MAP_PATH, ROUTES_TWIN_MAP_PATH};

use super::*;

const FEATURES: &str = "maps/features.map";

type Entries = BTreeMap<String, String>;

fn plan(routes: &Entries, features: &Entries) -> Plan {
    let map = |path: &str, kind, entries: &Entries| MapPlan {
        path: path.to_string(),
        match_kind: kind,
        entries: entries
            .iter()
            .map(|(key, value)| MapEntry::new(key.as_str(), value.as_str()))
            .collect(),
        twin: None,
    };
    Plan {
        maps: vec![
            map(FEATURES, MatchKind::Str, features),
            map(ROUTES_MAP_PATH, MatchKind::Beg, routes),
        ],
        ..Plan::default()
    }
}

/// HAProxy's `map_beg`: the value of the longest key that begins `path`.
fn lookup_beg<'a>(entries: &'a Entries, path: &str) -> Option<&'a String> {
    entries
        .iter()
        .filter(|(key, _)| path.starts_with(key.as_str()))
        .max_by_key(|(key, _)| key.len())
        .map(|(_, value)| value)
}

/// Applies `op` to the modelled maps, as HAProxy would.
fn apply(maps: &mut BTreeMap<String, Entries>, desired: &Plan, op: &RuntimeOp) {
    match op {
        RuntimeOp::ReplaceMap { path } => {
            let map = desired.map_at(path).expect("map");
            let entries = map
                .entries
                .iter()
                .map(|e| (e.key.to_string(), e.value.to_string()))
                .collect();
            maps.insert(path.clone(), entries);
        }
        RuntimeOp::EditMap { path, edit } => apply_edit(maps.get_mut(path).expect("map"), edit),
        other => panic!("not a map operation: {other:?}"),
    }
}

/// `add map` of a key already there would list it twice, `set`/`del` of
/// a missing one fail: the model refuses both.
fn apply_edit(map: &mut Entries, edit: &MapEdit) {
    match edit {
        MapEdit::Add { key, value } => {
            assert!(map.insert(key.clone(), value.clone()).is_none(), "{edit:?}")
        }
        MapEdit::Set { key, value } => {
            assert!(map.insert(key.clone(), value.clone()).is_some(), "{edit:?}")
        }
        MapEdit::Del { key } => assert!(map.remove(key).is_some(), "{edit:?}"),
    }
}

/// A small deterministic generator (xorshift), so failures replay.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % sides as u64) as usize
    }
}

/// Every path of up to three letters of `ab` under `h/`.
fn paths() -> Vec<String> {
    let mut paths = vec!["h/".to_string()];
    for len in 1..=3 {
        for n in 0..(1 << len) {
            let tail: String = (0..len)
                .map(|i| if n >> i & 1 == 1 { 'b' } else { 'a' })
                .collect();
            paths.push(format!("h/{tail}"));
        }
    }
    paths
}

/// A version: some route keys, each naming a feature set, and the feature
/// sets they name (some with another value), plus some named by none.
fn version(dice: &mut Dice, keys: &[String]) -> (Entries, Entries) {
    let mut routes = Entries::new();
    let mut features = Entries::new();
    for key in keys {
        if dice.roll(2) == 0 {
            let feature = format!("f{}", dice.roll(4));
            features.insert(feature.clone(), format!("v{}", dice.roll(2)));
            routes.insert(key.clone(), feature);
        }
    }
    if dice.roll(2) == 0 {
        features.insert(format!("f{}", dice.roll(6)), "spare".into());
    }
    (routes, features)
}

/// Two random versions, the desired one's plan and the map operations
/// from the first to the second.
struct Case {
    old_routes: Entries,
    old_features: Entries,
    new_routes: Entries,
    new_features: Entries,
    desired: Plan,
    ops: MapOps,
}

impl Case {
    fn roll(dice: &mut Dice, keys: &[String], plan: impl Fn(&Entries, &Entries) -> Plan) -> Case {
        let (old_routes, old_features) = version(dice, keys);
        let (new_routes, new_features) = version(dice, keys);
        let running = plan(&old_routes, &old_features);
        let desired = plan(&new_routes, &new_features);
        // As the file diff finds them: a twin's file changes with its map's.
        let changed = [FEATURES, ROUTES_MAP_PATH, ROUTES_TWIN_MAP_PATH]
            .into_iter()
            .filter(|path| running.map_at(path) != desired.map_at(path))
            .map(String::from)
            .collect();
        let ops = map_ops(changed, &running, &desired);
        Case {
            old_routes,
            old_features,
            new_routes,
            new_features,
            desired,
            ops,
        }
    }
}

#[test]
fn every_request_finds_its_route_before_or_after_and_its_features_in_place() {
    let keys = paths();
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    for round in 0..2_000 {
        let Case {
            old_routes,
            old_features,
            new_routes,
            new_features,
            desired,
            ops,
        } = Case::roll(&mut dice, &keys, plan);
        let mut maps = BTreeMap::from([
            (FEATURES.to_string(), old_features.clone()),
            (ROUTES_MAP_PATH.to_string(), old_routes.clone()),
        ]);
        for (step, op) in ops.first.iter().chain(&ops.last).enumerate() {
            apply(&mut maps, &desired, op);
            for path in &keys {
                let at = format!("round {round}, step {step} ({op:?}): {path}");
                let route = lookup_beg(&maps[ROUTES_MAP_PATH], path);
                let (before, after) =
                    (lookup_beg(&old_routes, path), lookup_beg(&new_routes, path));
                assert!(
                    route == before || route == after,
                    "{at} meets route {route:?}, neither {before:?} nor {after:?}"
                );
                let Some(feature) = route else { continue };
                let value = maps[FEATURES].get(feature);
                assert!(
                    value.is_some(),
                    "{at}: its feature set {feature} is missing"
                );
                assert!(
                    value == old_features.get(feature) || value == new_features.get(feature),
                    "{at}: feature set {feature} is {value:?}"
                );
            }
        }
        assert_eq!(maps[ROUTES_MAP_PATH], new_routes, "round {round}");
        assert_eq!(maps[FEATURES], new_features, "round {round}");
    }
}

#[test]
fn a_large_change_or_a_list_map_is_one_replacement() {
    let routes = |n: usize| -> Entries {
        (0..n)
            .map(|i| (format!("h{i}/"), "f".to_string()))
            .collect()
    };
    let features = Entries::from([("f".to_string(), "v".to_string())]);
    let running = plan(&routes(1), &features);
    let desired = plan(&routes(MAX_ENTRY_EDITS + 2), &features);
    let ops = map_ops(vec![ROUTES_MAP_PATH.into()], &running, &desired);
    assert_eq!(
        ops.first,
        vec![RuntimeOp::ReplaceMap {
            path: ROUTES_MAP_PATH.into()
        }]
    );
    assert!(ops.last.is_empty());

    let mut running = plan(&routes(1), &features);
    let mut desired = plan(&routes(2), &features);
    for plan in [&mut running, &mut desired] {
        plan.maps[1].match_kind = MatchKind::Reg;
    }
    let ops = map_ops(vec![ROUTES_MAP_PATH.into()], &running, &desired);
    assert!(matches!(ops.first[..], [RuntimeOp::ReplaceMap { .. }]));
}

/// `plan` with its route map kept in two copies.
fn twinned(mut plan: Plan) -> Plan {
    plan.maps[1].twin = Some(ROUTES_TWIN_MAP_PATH.to_string());
    plan.maps.extend(MapPlan::live_twins(&plan.maps));
    plan
}

#[test]
fn requests_read_a_twinned_route_map_whole_in_one_version_at_every_step() {
    let keys = paths();
    let mut dice = Dice(0x2545_f491_4f6c_dd1d);
    for round in 0..1_000 {
        let Case {
            old_routes,
            old_features,
            new_routes,
            new_features,
            desired,
            ops,
        } = Case::roll(&mut dice, &keys, |routes, features| {
            twinned(plan(routes, features))
        });
        let mut maps = BTreeMap::from([
            (FEATURES.to_string(), old_features.clone()),
            (ROUTES_MAP_PATH.to_string(), old_routes.clone()),
            (ROUTES_TWIN_MAP_PATH.to_string(), old_routes.clone()),
        ]);
        // Either copy may be the one read when an apply starts.
        let mut read = [ROUTES_MAP_PATH, ROUTES_TWIN_MAP_PATH][round % 2];
        let check = |maps: &BTreeMap<String, Entries>, read: &str, at: &str| {
            let routes = &maps[read];
            assert!(
                *routes == old_routes || *routes == new_routes,
                "round {round}, {at}: requests read a mix of versions: {routes:?}"
            );
            for feature in routes.values() {
                let value = maps[FEATURES].get(feature);
                assert!(
                    value.is_some()
                        && (value == old_features.get(feature)
                            || value == new_features.get(feature)),
                    "round {round}, {at}: feature set {feature} is {value:?}"
                );
            }
        };
        for op in ops.first.iter().chain(&ops.last) {
            let RuntimeOp::EditTwinMap { path, twin, edits } = op else {
                apply(&mut maps, &desired, op);
                check(&maps, read, &format!("{op:?}"));
                continue;
            };
            for step in twin_steps(path, twin, Some(read), edits).expect("a copy is read") {
                match step {
                    TwinStep::Edit { map, edit } => {
                        apply_edit(maps.get_mut(map).expect("map"), edit)
                    }
                    TwinStep::Read { copy } => read = copy,
                }
                check(&maps, read, &format!("{step:?}"));
            }
        }
        assert_eq!(maps[ROUTES_MAP_PATH], new_routes, "round {round}");
        assert_eq!(maps[ROUTES_TWIN_MAP_PATH], new_routes, "round {round}");
        assert_eq!(maps[FEATURES], new_features, "round {round}");
    }
}

#[test]
fn a_twinned_map_is_edited_in_the_copy_not_read_then_read_from_it() {
    let edits = [
        MapEdit::Del { key: "k".into() },
        MapEdit::Del { key: "l".into() },
    ];
    let steps = |read| twin_steps("a.map", "b.map", read, &edits);
    let edit = |map, at: usize| TwinStep::Edit {
        map,
        edit: &edits[at],
    };
    assert_eq!(
        steps(Some("a.map")),
        Some(vec![
            edit("b.map", 0),
            edit("b.map", 1),
            TwinStep::Read { copy: "b.map" },
            edit("a.map", 0),
            edit("a.map", 1),
        ])
    );
    assert_eq!(
        steps(Some("b.map")),
        Some(vec![
            edit("a.map", 0),
            edit("a.map", 1),
            TwinStep::Read { copy: "a.map" },
            edit("b.map", 0),
            edit("b.map", 1),
        ])
    );
    assert_eq!(steps(Some("c.map")), None);
    assert_eq!(steps(None), None);
}

#[test]
fn one_edit_of_a_twinned_map_is_made_in_the_copy_read_first() {
    let edits = [MapEdit::Add {
        key: "k".into(),
        value: "v".into(),
    }];
    let edit = |map| TwinStep::Edit {
        map,
        edit: &edits[0],
    };
    assert_eq!(
        twin_steps("a.map", "b.map", Some("a.map"), &edits),
        Some(vec![edit("a.map"), edit("b.map")])
    );
    assert_eq!(
        twin_steps("a.map", "b.map", Some("b.map"), &edits),
        Some(vec![edit("b.map"), edit("a.map")])
    );
    assert_eq!(twin_steps("a.map", "b.map", None, &edits), None);
}

#[test]
fn walking_two_ordered_maps_finds_what_comparing_by_key_finds() {
    fn sorted(mut changes: EntryChanges<'_>) -> EntryChanges<'_> {
        changes.added.sort();
        changes.changed.sort();
        changes.removed.sort();
        changes
    }
    let keys = paths();
    let mut dice = Dice(0x5eed_3a11);
    let mut map = || {
        let (routes, _) = version(&mut dice, &keys);
        MapPlan {
            entries: routes
                .into_iter()
                .map(|(key, value)| MapEntry::new(key, value))
                .collect(),
            ..MapPlan::longest_first(ROUTES_MAP_PATH, Vec::new())
        }
    };
    let longest = |map: &MapPlan| MapPlan::longest_first(&map.path, map.entries.clone());
    for _ in 0..500 {
        // By key (as generated), and longest key first (as routes are).
        let (old, new) = (map(), map());
        for (old, new) in [(old.clone(), new.clone()), (longest(&old), longest(&new))] {
            let expected = EntryChanges::by_key(&old, &new).map(sorted);
            assert!(
                expected
                    .as_ref()
                    .is_some_and(|c| c.count() <= MAX_ENTRY_EDITS)
            );
            assert_eq!(
                EntryChanges::walked(&old.entries, &new.entries).map(sorted),
                expected
            );
        }
        // In neither order, or with a key twice: no walk.
        let mut shuffled = longest(&old).entries;
        shuffled.rotate_left(1);
        if !in_order(&shuffled, MapEntry::longest_first) && !in_order(&shuffled, str::cmp) {
            assert_eq!(EntryChanges::walked(&shuffled, &new.entries), None);
        }
        if let Some(first) = new.entries.first() {
            let mut twice = new.entries.clone();
            twice.push(first.clone());
            twice.sort_by(|a, b| a.key.cmp(&b.key));
            assert_eq!(EntryChanges::walked(&old.entries, &twice), None);
        }
    }
}
