//! The order of map edits, checked against a model of HAProxy's lookups:
//! at every step between two versions, each request finds the route it
//! finds in one of them, and that route's feature set in place, with its
//! value of one of them.

use std::collections::BTreeMap;

use hawser_plan::{MapEntry, MapPlan, MatchKind, Plan, ROUTES_MAP_PATH};

use super::*;

const FEATURES: &str = "maps/features.map";

type Entries = BTreeMap<String, String>;

fn plan(routes: &Entries, features: &Entries) -> Plan {
    let map = |path: &str, kind, entries: &Entries| MapPlan {
        path: path.to_string(),
        match_kind: kind,
        entries: entries
            .iter()
            .map(|(key, value)| MapEntry {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
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

/// Applies `op` to the modelled maps, as HAProxy would; `add map` of a key
/// already there would list it twice, `set`/`del` of a missing one fail.
fn apply(maps: &mut BTreeMap<String, Entries>, desired: &Plan, op: &RuntimeOp) {
    match op {
        RuntimeOp::ReplaceMap { path } => {
            let map = desired.maps.iter().find(|m| &m.path == path).expect("map");
            let entries = map
                .entries
                .iter()
                .map(|e| (e.key.clone(), e.value.clone()))
                .collect();
            maps.insert(path.clone(), entries);
        }
        RuntimeOp::EditMap { path, edit } => {
            let map = maps.get_mut(path).expect("map");
            match edit {
                MapEdit::Add { key, value } => {
                    assert!(map.insert(key.clone(), value.clone()).is_none(), "{op:?}")
                }
                MapEdit::Set { key, value } => {
                    assert!(map.insert(key.clone(), value.clone()).is_some(), "{op:?}")
                }
                MapEdit::Del { key } => assert!(map.remove(key).is_some(), "{op:?}"),
            }
        }
        other => panic!("not a map operation: {other:?}"),
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

#[test]
fn every_request_finds_its_route_before_or_after_and_its_features_in_place() {
    let keys = paths();
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    for round in 0..2_000 {
        let (old_routes, old_features) = version(&mut dice, &keys);
        let (new_routes, new_features) = version(&mut dice, &keys);
        let running = plan(&old_routes, &old_features);
        let desired = plan(&new_routes, &new_features);
        let changed = [FEATURES, ROUTES_MAP_PATH]
            .into_iter()
            .filter(|path| {
                let of = |plan: &Plan| plan.maps.iter().find(|m| m.path == *path).cloned();
                of(&running) != of(&desired)
            })
            .map(String::from)
            .collect();
        let ops = map_ops(changed, &running, &desired);
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
