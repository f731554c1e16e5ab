//! Ingress `status.loadBalancer`: the addresses of the Service that fronts
//! HAProxy, written into every Ingress hawser serves — by the leader only,
//! and only when it differs from what the Ingress already says.
//!
//! ```text
//!  publish Service (its status.loadBalancer.ingress) ─┐
//!  newest snapshot (the Ingresses it serves) ─────────┼─► differs from the Ingress? ─► patch status
//!  leadership ────────────────────────────────────────┘     (cached: one read per Ingress)
//! ```
//!
//! The write changes nothing the sources keep (they drop status), so it
//! triggers no render.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ::kube::Client;
use ::kube::api::{Api, Patch, PatchParams};
use hawser_model::ObjectKey;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{Ingress, IngressLoadBalancerIngress};
use serde_json::json;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::fleet::Snapshot;

/// How often the Service's addresses are read again.
pub const SERVICE_POLL: Duration = Duration::from_secs(10);

type Addresses = Vec<IngressLoadBalancerIngress>;

/// Keeps the status of served Ingresses equal to `service`'s load-balancer
/// addresses while `leading` is `Some`, until `stop` resolves.
pub async fn publish_status(
    client: Client,
    service: ObjectKey,
    mut snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    mut leading: watch::Receiver<Option<u64>>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let services: Api<Service> = Api::namespaced(client.clone(), &service.namespace);
    // What each Ingress's status is known to say (read once, then written).
    let mut known: BTreeMap<ObjectKey, Addresses> = BTreeMap::new();
    loop {
        let snapshot = snapshots.borrow_and_update().clone();
        if leading.borrow_and_update().is_some()
            && let Some(snapshot) = snapshot
        {
            match services.get_opt(&service.name).await {
                Ok(Some(svc)) => {
                    let addresses = addresses_of(&svc);
                    for key in snapshot.served.iter() {
                        sync_one(&client, key, &addresses, &mut known).await;
                    }
                    known.retain(|key, _| snapshot.served.contains(key));
                }
                Ok(None) => {
                    warn!(service = %service, "the publish Service does not exist; Ingress status left alone")
                }
                Err(e) => warn!(service = %service, "cannot read the publish Service: {e}"),
            }
        } else {
            // A new leader reads again: another one may have written meanwhile.
            known.clear();
        }
        tokio::select! {
            () = &mut stop => return,
            changed = snapshots.changed() => if changed.is_err() { return },
            changed = leading.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(SERVICE_POLL) => {}
        }
    }
}

fn addresses_of(service: &Service) -> Addresses {
    let mut addresses: Addresses = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .map(|ingress| {
            ingress
                .iter()
                .map(|i| IngressLoadBalancerIngress {
                    ip: i.ip.clone(),
                    hostname: i.hostname.clone(),
                    ports: None,
                })
                .collect()
        })
        .unwrap_or_default();
    addresses.sort_by(|a, b| (&a.ip, &a.hostname).cmp(&(&b.ip, &b.hostname)));
    addresses
}

async fn sync_one(
    client: &Client,
    key: &ObjectKey,
    addresses: &Addresses,
    known: &mut BTreeMap<ObjectKey, Addresses>,
) {
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), &key.namespace);
    if !known.contains_key(key) {
        match ingresses.get_opt(&key.name).await {
            Ok(Some(ingress)) => {
                let current = ingress
                    .status
                    .and_then(|s| s.load_balancer)
                    .and_then(|lb| lb.ingress)
                    .unwrap_or_default();
                known.insert(key.clone(), current);
            }
            Ok(None) => return,
            Err(e) => {
                warn!(ingress = %key, "cannot read the Ingress status: {e}");
                return;
            }
        }
    }
    if known.get(key) == Some(addresses) {
        return;
    }
    let patch = json!({ "status": { "loadBalancer": { "ingress": addresses } } });
    match ingresses
        .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {
            info!(ingress = %key, "status.loadBalancer written");
            known.insert(key.clone(), addresses.clone());
        }
        Err(e) => {
            debug!(ingress = %key, "status write failed: {e}");
            known.remove(key);
        }
    }
}
