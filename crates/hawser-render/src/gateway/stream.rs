//! TLSRoute and TCPRoute rules: their backends, weighted and resolved.

use hawser_model::{Kind, RouteMeta, Store, StreamRouteRule};

use super::backend_refs::{Resolver, reachable};
use super::compiled::Compiled;
use super::filters::Resolution;
use super::table::WeightedBackend;

/// The backends of every rule of a stream route (connections carry no
/// request to match, so rules only add backends).
#[derive(Debug, Clone)]
pub(super) struct StreamRule {
    pub backends: Vec<WeightedBackend>,
}

pub(super) fn compile(
    store: &Store,
    kind: Kind,
    meta: &RouteMeta,
    rules: &[StreamRouteRule],
) -> Compiled<StreamRule> {
    Compiled::build(store, kind, meta, rules, rule)
}

fn rule(
    _index: usize,
    given: &StreamRouteRule,
    resolver: &Resolver<'_>,
    resolution: &mut Resolution,
) -> Result<StreamRule, String> {
    let backends = given
        .backend_refs
        .iter()
        .map(|b| {
            let weight = u32::try_from(b.weight)
                .map_err(|_| format!("backendRef {:?} has a negative weight", b.name))?;
            Ok(WeightedBackend {
                target: resolver.target(b, &mut resolution.used, &mut resolution.unresolved),
                weight,
                filters: Vec::new(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(StreamRule { backends })
}

/// All backends of a route's kept rules, and whether none is reachable.
pub(super) fn merged(rules: &[StreamRule]) -> (Vec<WeightedBackend>, bool) {
    let backends: Vec<WeightedBackend> = rules.iter().flat_map(|r| r.backends.clone()).collect();
    let unavailable = !reachable(&backends);
    (backends, unavailable)
}
