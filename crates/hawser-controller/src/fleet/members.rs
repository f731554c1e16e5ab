//! Which agents the fleet pushes to: one link task per agent, started and
//! stopped as the membership changes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;
use tracing::{info, info_span};

use super::build::Renders;
use super::link::Link;
use super::watched::{Ended, Watched};
use super::{AgentLinkStatus, AgentTarget, FleetConfig, FleetStatus, Snapshot};

/// What every link is started with, and the links running.
#[derive(Debug)]
pub struct Members {
    config: FleetConfig,
    renders: Arc<Renders>,
    snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    status: Arc<watch::Sender<FleetStatus>>,
    stop: watch::Receiver<bool>,
    links: Mutex<BTreeMap<String, Watched>>,
    ended: Ended,
}

impl Members {
    pub fn new(
        config: FleetConfig,
        renders: Arc<Renders>,
        snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
        status: Arc<watch::Sender<FleetStatus>>,
        stop: watch::Receiver<bool>,
        ended: Ended,
    ) -> Self {
        Members {
            config,
            renders,
            snapshots,
            status,
            stop,
            links: Mutex::default(),
            ended,
        }
    }

    /// Starts links to the agents not linked yet, stops those not listed.
    pub fn set(&self, agents: &[AgentTarget]) {
        if *self.stop.borrow() {
            return;
        }
        let wanted: BTreeMap<String, &AgentTarget> = agents
            .iter()
            .map(|target| (target.addr.to_string(), target))
            .collect();
        let mut links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        let gone: Vec<String> = links
            .keys()
            .filter(|key| !wanted.contains_key(*key))
            .cloned()
            .collect();
        for key in gone {
            if let Some(link) = links.remove(&key) {
                // Mid-push or not: the agent is gone (or no longer ours), and
                // an interrupted Apply is one the agent already survives.
                link.release();
            }
            self.renders.forget(&key);
            self.status.send_modify(|s| {
                s.agents.remove(&key);
            });
            info!(agent = %key, "agent left the fleet");
        }
        for (key, target) in wanted {
            if links.contains_key(&key) {
                continue;
            }
            self.status.send_modify(|s| {
                s.agents.insert(
                    key.clone(),
                    AgentLinkStatus {
                        addr: key.clone(),
                        ..AgentLinkStatus::default()
                    },
                );
            });
            let link = Link {
                target: target.clone(),
                key: key.clone(),
                config: self.config.clone(),
                renders: Arc::clone(&self.renders),
                snapshots: self.snapshots.clone(),
                status: Arc::clone(&self.status),
            };
            let watched = Watched::spawn(
                format!("link to agent {key}"),
                info_span!("link", agent = %key),
                link.run(self.stop.clone()),
                self.ended.clone(),
            );
            links.insert(key.clone(), watched);
            if !self.config.agents.iter().any(|a| a == target) {
                info!(agent = %key, "agent joined the fleet");
            }
        }
    }

    /// The running links, for a graceful stop.
    pub fn take(&self) -> Vec<Watched> {
        let mut links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut *links).into_values().collect()
    }
}
