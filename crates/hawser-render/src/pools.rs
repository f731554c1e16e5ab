//! Spare backends: pools of backends declared ahead, so that a new Service
//! is served without a reload (HAProxy 3.0 adds servers at runtime, never
//! backends; see [`BackendRole`]).
//!
//! A render that follows another first tries to keep every backend the last
//! one declared ([`lend`]): a Service's own backend stays, emptied when the
//! Service goes; a spare lent to a Service stays lent; a new Service borrows
//! a free spare of its [`BackendShape`], reached through the spares map. When
//! that cannot work (no free spare of the shape, a backend changed shape,
//! haproxy.cfg names a lent or retired backend itself: see
//! [`config_misnames`]), or the configuration changes anyway, the render
//! starts over ([`fresh`]): every
//! Service has its own backend again, and every shape a full pool, twice as
//! large as what the last one lent when that was more. Either way the agent
//! applies what changed; only a fresh render changes the structure, so only
//! it can cost a reload.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};

use hawser_plan::{
    BackendMode, BackendPlan, BackendRole, BackendShape, MapEntry, MapPlan, MatchKind, Plan,
    SPARES_MAP_PATH,
};

use crate::backends::DEFAULT_BALANCE;

mod lend;
pub use lend::lend;

/// What haproxy.cfg says a spare serves (its `# from:` mark) in the plan
/// the structure digest is taken of; a lent spare names its Service there.
pub const SPARE_SOURCE: &str = "hawser: a spare backend, lent to a new Service until a reload";
/// The most spares one shape's pool grows to.
pub const MAX_SPARES: u32 = 1024;
/// Every spare's name starts so; no Service's backend does (theirs start `be_`).
const SPARE_PREFIX: &str = "hawser_spare_";

/// Every backend its own, plus a full pool for every HTTP shape in use and
/// the plain one: `spares` for the plain shape, an eighth of that (one at
/// least) for the others, which fewer Services share; twice what the last
/// pool of the shape lent when that is more. No pools when `spares` is 0.
pub fn fresh(
    wanted: Vec<Arc<BackendPlan>>,
    previous: Option<&Plan>,
    spares: u32,
) -> Vec<Arc<BackendPlan>> {
    let mut backends = wanted;
    if spares == 0 {
        return backends;
    }
    let mut lent_before: BTreeMap<BackendShape, u32> = BTreeMap::new();
    for was in previous.iter().flat_map(|p| &p.backends) {
        if was.role.lent_to().is_some() {
            *lent_before.entry(was.shape()).or_default() += 1;
        }
    }
    let mut shapes = BTreeSet::from([plain_shape()]);
    let mut last: Option<&BackendPlan> = None;
    for backend in backends.iter().filter(|b| b.mode == BackendMode::Http) {
        // Backends of one shape mostly come in runs: a run is copied once.
        if last.is_some_and(|last| last.same_shape(backend)) {
            continue;
        }
        shapes.insert(backend.shape());
        last = Some(backend);
    }
    let plain = plain_shape();
    for shape in shapes {
        let lent = lent_before.get(&shape).copied().unwrap_or(0);
        let least = if shape == plain {
            spares
        } else {
            (spares / 8).max(1)
        };
        let count = least.max(lent.saturating_mul(2)).min(MAX_SPARES);
        let tag = shape_tag(&shape);
        for n in 1..=count {
            let name = format!("{SPARE_PREFIX}{tag}_{n:04}");
            backends.push(Arc::new(spare(name, &shape)));
        }
    }
    backends.sort_by(|a, b| a.name.cmp(&b.name));
    backends
}

/// The spares map of `backends`: each lent spare's Service backend → the spare.
pub fn spares_map(backends: &[Arc<BackendPlan>]) -> MapPlan {
    let mut entries: Vec<MapEntry> = backends
        .iter()
        .filter_map(|b| {
            b.role
                .lent_to()
                .map(|name| MapEntry::new(name, b.name.as_str()))
        })
        .collect();
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    MapPlan {
        path: SPARES_MAP_PATH.to_string(),
        match_kind: MatchKind::Str,
        entries,
        twin: None,
    }
}

/// Whether `config` names a backend it does not declare as such: one
/// served from a spare (a template's `use_backend be_app_web_80` needs it
/// declared), or a retired one anywhere but its own declaration (a snippet
/// still using it should fail now, not at some later reload).
pub fn config_misnames(config: &str, backends: &[Arc<BackendPlan>]) -> bool {
    let mut allowed: HashMap<&str, usize> = HashMap::new();
    for backend in backends {
        match &backend.role {
            BackendRole::Lent { name, .. } => allowed.insert(name, 0),
            BackendRole::Retired => allowed.insert(&backend.name, 1),
            _ => None,
        };
    }
    if allowed.is_empty() {
        return false;
    }
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || "_.-".contains(c);
    let mut seen: HashMap<&str, usize> = HashMap::new();
    config.split(|c| !part_of_name(c)).any(|word| {
        allowed.get(word).is_some_and(|allowed| {
            let count = seen.entry(word).or_default();
            *count += 1;
            *count > *allowed
        })
    })
}

/// What `/status` shows of the pools: how many spares are free, and which
/// Service each lent one serves (a spare's name in HAProxy's statistics
/// stands for the Service here).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpareStatus {
    pub free: usize,
    /// Spare backend → the Service backend it serves.
    pub lent: BTreeMap<String, LentTo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LentTo {
    pub backend: String,
    pub source: String,
}

impl SpareStatus {
    pub fn of(plan: &Plan) -> SpareStatus {
        let mut status = SpareStatus::default();
        for backend in &plan.backends {
            match &backend.role {
                BackendRole::Spare => status.free += 1,
                BackendRole::Lent { name, source } => {
                    let to = LentTo {
                        backend: name.clone(),
                        source: source.clone(),
                    };
                    status.lent.insert(backend.name.clone(), to);
                }
                _ => {}
            }
        }
        status
    }
}

/// A Service without backend settings: the pool always kept, for the
/// Service nobody has asked for yet.
fn plain_shape() -> BackendShape {
    BackendShape {
        mode: BackendMode::Http,
        balance: DEFAULT_BALANCE.to_string(),
        timeout_server: None,
        timeout_connect: None,
        cookie: None,
    }
}

/// A short name for a shape, the same in every render.
fn shape_tag(shape: &BackendShape) -> String {
    let mut hash = Sha256::new();
    let mode = match shape.mode {
        BackendMode::Http => "http",
        BackendMode::Tcp => "tcp",
    };
    let fields = [
        Some(mode),
        Some(shape.balance.as_str()),
        shape.timeout_server.as_deref(),
        shape.timeout_connect.as_deref(),
        shape.cookie.as_deref(),
    ];
    for field in fields {
        hash.update(field.unwrap_or("-").as_bytes());
        hash.update(b"\0");
    }
    hex::encode(hash.finalize())[..8].to_string()
}

fn spare(name: String, shape: &BackendShape) -> BackendPlan {
    BackendPlan {
        name,
        source: SPARE_SOURCE.to_string(),
        balance: shape.balance.clone(),
        timeout_server: shape.timeout_server.clone(),
        timeout_connect: shape.timeout_connect.clone(),
        servers: Vec::new(),
        mode: shape.mode,
        cookie: shape.cookie.clone(),
        role: BackendRole::Spare,
        service: None,
    }
}

fn lent(spare: &BackendPlan, to: &BackendPlan) -> Arc<BackendPlan> {
    Arc::new(BackendPlan {
        source: to.source.clone(),
        servers: to.servers.clone(),
        role: BackendRole::Lent {
            name: to.name.clone(),
            source: to.source.clone(),
        },
        service: to.service.clone(),
        ..spare.clone()
    })
}

fn emptied(was: &Arc<BackendPlan>, source: String, role: BackendRole) -> Arc<BackendPlan> {
    // A retired backend still stands for its Service; an emptied spare for none.
    let service = match role {
        BackendRole::Retired => was.service.clone(),
        _ => None,
    };
    // Empty already (a free spare staying free): the same plan, shared.
    if was.servers.is_empty() && was.source == source && was.role == role && was.service == service
    {
        return Arc::clone(was);
    }
    Arc::new(BackendPlan {
        source,
        servers: Vec::new(),
        role,
        service,
        ..BackendPlan::clone(was)
    })
}

#[cfg(test)]
mod tests;
