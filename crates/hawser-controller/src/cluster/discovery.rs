//! Agent discovery: the pods that run agents, as the fleet's targets.
//!
//! ```text
//!  watcher(pods in namespace, label selector) ──► pod name → podIP:agentPort if Ready
//!                                                  │ (not Ready, no IP, terminating: none)
//!                                                  ▼
//!                               watch::Sender<Vec<AgentTarget>> ──► Fleet::follow_agents
//! ```
//!
//! The list is published once the first list is complete, then on every
//! change of it (sorted, so an unrelated pod event publishes nothing).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use ::kube::api::{ApiResource, DynamicObject};
use ::kube::runtime::WatchStreamExt as _;
use ::kube::runtime::watcher::{self, Event, watcher};
use ::kube::{Api, Client};
use k8s_openapi::api::core::v1 as core;
use serde::Deserialize;
use tokio::sync::watch;
use tokio_stream::StreamExt as _;
use tracing::{info, warn};

use crate::fleet::AgentTarget;

#[cfg(test)]
mod tests;

/// Which pods run agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDiscovery {
    pub namespace: String,
    /// As the API server reads it (`app.kubernetes.io/name=hawser,app.kubernetes.io/component=haproxy`).
    pub label_selector: String,
    /// The port each agent listens on (the pod's IP, this port).
    pub agent_port: u16,
}

/// The only fields of a pod discovery reads: its status's IP and conditions.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodStatusFields {
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Debug, Deserialize)]
struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

/// Publishes the agents on `targets` until `stop` resolves. Watch failures
/// are retried with kube's default backoff; the last list stays published
/// meanwhile. A new `discovery` (the HawserConfig changed) starts a new
/// watch; the old list stays published until the new one is complete.
pub async fn discover_agents(
    client: Client,
    mut discovery: watch::Receiver<AgentDiscovery>,
    targets: watch::Sender<Vec<AgentTarget>>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut current = discovery.borrow_and_update().clone();
    let mut changes_open = true;
    loop {
        let follow = follow_pods(client.clone(), current.clone(), &targets);
        tokio::pin!(follow);
        loop {
            tokio::select! {
                () = &mut stop => return,
                () = &mut follow => return,
                changed = discovery.changed(), if changes_open => {
                    if changed.is_err() {
                        changes_open = false; // follow these pods for good
                        continue;
                    }
                    let next = discovery.borrow_and_update().clone();
                    if next != current {
                        info!("agent selection changed: watching pods again");
                        current = next;
                        break;
                    }
                }
            }
        }
    }
}

/// Follows the pods `discovery` selects; ends only when the watch stream does.
async fn follow_pods(
    client: Client,
    discovery: AgentDiscovery,
    targets: &watch::Sender<Vec<AgentTarget>>,
) {
    let resource = ApiResource::erase::<core::Pod>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client, &discovery.namespace, &resource);
    let config = watcher::Config::default().labels(&discovery.label_selector);
    let events = watcher(api, config).default_backoff();
    let mut events = std::pin::pin!(events);
    let mut pods: BTreeMap<String, Option<SocketAddr>> = BTreeMap::new();
    let mut relist: Option<BTreeMap<String, Option<SocketAddr>>> = None;
    let mut synced = false;
    let mut last_error: Option<String> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => relist = Some(BTreeMap::new()),
            Ok(Event::InitApply(pod)) => {
                let (name, addr) = agent_of(&pod, discovery.agent_port);
                relist.get_or_insert_default().insert(name, addr);
            }
            Ok(Event::InitDone) => {
                pods = relist.take().unwrap_or_default();
                synced = true;
                last_error = None;
            }
            Ok(Event::Apply(pod)) => {
                let (name, addr) = agent_of(&pod, discovery.agent_port);
                pods.insert(name, addr);
            }
            Ok(Event::Delete(pod)) => {
                pods.remove(&pod.metadata.name.clone().unwrap_or_default());
            }
            Err(error) => {
                let error = error.to_string();
                if last_error.as_ref() != Some(&error) {
                    warn!("agent discovery: {error}");
                }
                last_error = Some(error);
            }
        }
        if synced {
            let mut agents: Vec<AgentTarget> = pods
                .values()
                .flatten()
                .map(|&addr| AgentTarget { addr })
                .collect();
            agents.sort();
            agents.dedup();
            targets.send_if_modified(|current| {
                if *current == agents {
                    return false;
                }
                info!(
                    "agents: {}",
                    agents
                        .iter()
                        .map(|a| a.addr.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                *current = agents;
                true
            });
        }
    }
}

/// The pod's name, and its agent's address when the pod is Ready, has an
/// IP and is not terminating.
fn agent_of(pod: &DynamicObject, port: u16) -> (String, Option<SocketAddr>) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    if pod.metadata.deletion_timestamp.is_some() {
        return (name, None);
    }
    let status: PodStatusFields = pod
        .data
        .get("status")
        .and_then(|status| serde_json::from_value(status.clone()).ok())
        .unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    let ip = status
        .pod_ip
        .as_deref()
        .and_then(|ip| ip.parse::<IpAddr>().ok());
    (
        name,
        ip.filter(|_| ready).map(|ip| SocketAddr::new(ip, port)),
    )
}
