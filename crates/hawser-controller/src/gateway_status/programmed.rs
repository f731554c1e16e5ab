//! `Programmed` as the fleet makes it true: a Gateway (and each of its
//! listeners) the render programs is `Programmed=True` only once every agent
//! serves a generation that carries the Gateway as it is now; until then
//! `False`, reason `Pending`.
//!
//! ```text
//!  rendered status of a Gateway ──CarriedSince──► first generation carrying it as it is (G)
//!  FleetStatus (each agent's serving_generation) ──Rollout──► every agent serves ≥ G?
//!  address assignment (publish Service) ─────────────────────► AddressNotUsable / AddressNotAssigned
//!                                                               ▼
//!                                            Programmed: render's False > address > Pending > True
//! ```
//!
//! "Every agent" is every agent the fleet pushes to (the Ready agent pods
//! discovery lists, or `--agent`): clients reach any of them through the
//! Service, so one that still serves an older configuration would answer
//! them with it. With no agent at all nothing serves the Gateway, so it is
//! `Pending`. An unrelated change (a new generation that carries the
//! Gateway unchanged) leaves a programmed Gateway programmed: agents that
//! serve the previous generation serve it too.

use std::collections::BTreeMap;

use hawser_model::ObjectKey;
use hawser_render::{Condition, ConditionStatus, GatewayObjectStatus};

use crate::fleet::FleetStatus;

const PROGRAMMED: &str = "Programmed";

/// Which generation each agent serves, as far as the fleet knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rollout {
    serving: BTreeMap<String, Option<u64>>,
}

impl Rollout {
    pub fn of(fleet: &FleetStatus) -> Rollout {
        Rollout {
            serving: fleet
                .agents
                .iter()
                .map(|(name, agent)| (name.clone(), agent.serving_generation))
                .collect(),
        }
    }

    /// `Ok` when every agent serves `generation` or a newer one; otherwise
    /// what `Programmed` waits for.
    pub fn serves(&self, generation: u64) -> Result<(), String> {
        if self.serving.is_empty() {
            return Err(
                "no agent serves it yet: the controller has no agent to push to (no Ready agent pod was found)"
                    .to_string(),
            );
        }
        let behind = self
            .serving
            .values()
            .filter(|serving| serving.is_none_or(|g| g < generation))
            .count();
        if behind == 0 {
            return Ok(());
        }
        // Stable while the agents catch up: one write when it turns Pending,
        // one when it turns True, not one per agent.
        Err(format!(
            "waiting for every agent ({} in all) to serve generation {generation}, the first that carries it as it is",
            self.serving.len()
        ))
    }
}

/// The first generation that carried each Gateway as the render now says
/// it is (its conditions, listeners and attached routes).
#[derive(Debug, Default)]
pub struct CarriedSince {
    gateways: BTreeMap<ObjectKey, (GatewayObjectStatus, u64)>,
}

impl CarriedSince {
    /// The generation since which `gateway` is as it is, `generation` being
    /// the one the current render is.
    pub fn record(&mut self, gateway: &GatewayObjectStatus, generation: u64) -> u64 {
        match self.gateways.get(&gateway.gateway) {
            Some((seen, since)) if seen == gateway => *since,
            _ => {
                self.gateways
                    .insert(gateway.gateway.clone(), (gateway.clone(), generation));
                generation
            }
        }
    }

    /// Forgets the Gateways `keep` refuses.
    pub fn retain(&mut self, keep: impl Fn(&ObjectKey) -> bool) {
        self.gateways.retain(|key, _| keep(key));
    }
}

/// `gateway` with `Programmed` as it stands: the render's `False` is kept;
/// an address problem, then the fleet not serving it yet (`waiting`), turn
/// a `True` into `False`. Listeners follow the fleet only.
pub fn programmed_status(
    gateway: &GatewayObjectStatus,
    address_problem: Option<&(&'static str, String)>,
    waiting: Option<&str>,
) -> GatewayObjectStatus {
    let mut gateway = gateway.clone();
    let held_back = address_problem
        .map(|(reason, message)| (*reason, message.as_str()))
        .or(waiting.map(|message| ("Pending", message)));
    if let Some((reason, message)) = held_back {
        hold_back(&mut gateway.conditions, reason, message);
    }
    if let Some(message) = waiting {
        for listener in &mut gateway.listeners {
            hold_back(&mut listener.conditions, "Pending", message);
        }
    }
    gateway
}

/// Turns a `Programmed=True` among `conditions` into `False` with `reason`.
fn hold_back(conditions: &mut [Condition], reason: &'static str, message: &str) {
    let programmed = conditions
        .iter_mut()
        .find(|c| c.condition_type == PROGRAMMED && c.is_true());
    if let Some(condition) = programmed {
        condition.status = ConditionStatus::False;
        condition.reason = reason;
        condition.message = message.to_string();
    }
}

#[cfg(test)]
mod tests;
