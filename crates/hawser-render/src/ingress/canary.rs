//! Canary Ingresses (`canary: "true"`): each of its routes finds the route
//! another Ingress serves for the same host and path and takes its share of
//! it there; the routes-map value of that route names the canary, whose
//! backend and shares live in maps (`features::maps`), so changing a
//! weight is a runtime map change.

use hawser_model::ObjectRef;

use super::{Route, RouteTable, route_keys};
use crate::features::Canary;
use crate::report::Diagnostics;

/// A canary Ingress's backend and what it takes.
#[derive(Debug, Clone)]
pub(crate) struct CanaryRoute {
    pub backend: String,
    pub canary: Canary,
}

/// Attaches the canary Ingress `object` (`key`: `namespace/name`) to the
/// routes it shares; a route no other Ingress serves, or one another canary
/// shares already, is said and left alone.
pub(super) fn attach(
    table: &mut RouteTable,
    object: &ObjectRef,
    key: String,
    routes: &[Route],
    canary: Canary,
    diags: &mut Diagnostics,
) {
    let mut backend = None;
    for route in routes {
        for (map, entry) in route_keys(route) {
            let targets = table.claims_mut(map);
            let Some(target) = targets.get_mut(&entry) else {
                diags.warn(
                    object,
                    format!(
                        "route {entry:?} is served by no other Ingress: a canary only shares another's route"
                    ),
                );
                continue;
            };
            match &target.canary {
                Some(other) if *other != key => {
                    diags.warn(
                        object,
                        format!(
                            "route {entry:?} already has canary Ingress {other}; that one is served"
                        ),
                    );
                    continue;
                }
                _ => target.canary = Some(key.clone()),
            }
            match &backend {
                None => {
                    table.refer(route.backend.clone(), object);
                    backend = Some(route.backend.name());
                }
                Some(first) if *first != route.backend.name() => diags.warn(
                    object,
                    format!("a canary sends to one backend: {first}, that of its first route"),
                ),
                Some(_) => {}
            }
        }
    }
    if let Some(backend) = backend {
        table.canaries.insert(key, CanaryRoute { backend, canary });
    }
}

/// What the `ingress` library's canary lines read (`routing.canary`).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct CanaryView {
    pub backend_map: &'static str,
    pub header_map: &'static str,
    pub value_map: &'static str,
    pub cookie_map: &'static str,
    pub weight_map: &'static str,
    pub total_map: &'static str,
    /// The header and cookie names canaries go by (a line each, so a new
    /// name reloads; everything else is a map change).
    pub headers: Vec<String>,
    pub cookies: Vec<String>,
}

const BACKEND_MAP: &str = "maps/canary_backend.map";
const HEADER_MAP: &str = "maps/canary_header.map";
const VALUE_MAP: &str = "maps/canary_header_value.map";
const COOKIE_MAP: &str = "maps/canary_cookie.map";
const WEIGHT_MAP: &str = "maps/canary_weight.map";
const TOTAL_MAP: &str = "maps/canary_weight_total.map";

/// The canary maps (every one, empty or not), keyed by canary Ingress, and
/// the view the templates read.
pub(crate) fn canary_maps(
    canaries: &std::collections::BTreeMap<String, CanaryRoute>,
) -> (Vec<hawser_plan::MapPlan>, CanaryView) {
    use hawser_plan::{MapEntry, MapPlan, MatchKind};
    let mut backend = Vec::new();
    let mut header = Vec::new();
    let mut value = Vec::new();
    let mut cookie = Vec::new();
    let mut weight = Vec::new();
    let mut total = Vec::new();
    let mut headers = std::collections::BTreeSet::new();
    let mut cookies = std::collections::BTreeSet::new();
    for (id, route) in canaries {
        let entry = |v: &str| MapEntry::new(id.as_str(), v);
        let c = &route.canary;
        backend.push(entry(&route.backend));
        if let Some(name) = &c.header {
            headers.insert(name.clone());
            header.push(entry(name));
        }
        if let Some(v) = &c.header_value {
            value.push(entry(v));
        }
        if let Some(name) = &c.cookie {
            cookies.insert(name.clone());
            cookie.push(entry(name));
        }
        weight.push(entry(&c.weight.to_string()));
        total.push(entry(&c.total.to_string()));
    }
    let map = |path: &str, entries: Vec<MapEntry>| MapPlan {
        path: path.to_string(),
        match_kind: MatchKind::Str,
        entries,
        twin: None,
    };
    let maps = vec![
        map(BACKEND_MAP, backend),
        map(HEADER_MAP, header),
        map(VALUE_MAP, value),
        map(COOKIE_MAP, cookie),
        map(WEIGHT_MAP, weight),
        map(TOTAL_MAP, total),
    ];
    let view = CanaryView {
        backend_map: BACKEND_MAP,
        header_map: HEADER_MAP,
        value_map: VALUE_MAP,
        cookie_map: COOKIE_MAP,
        weight_map: WEIGHT_MAP,
        total_map: TOTAL_MAP,
        headers: headers.into_iter().collect(),
        cookies: cookies.into_iter().collect(),
    };
    (maps, view)
}
