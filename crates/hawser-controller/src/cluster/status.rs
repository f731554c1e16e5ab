//! Ingress `status.loadBalancer`: the addresses of the Service that fronts
//! HAProxy, written into every Ingress hawser serves — by the leader only,
//! and only when it differs from what the Ingress already says.
//!
//! ```text
//!  publish Service addresses (followed: follow_publish_service) ─┐
//!  newest snapshot (the Ingresses it serves) ────────────────────┼─► differs from the Ingress? ─► patch status
//!  leadership ───────────────────────────────────────────────────┘     (cached: one read per Ingress)
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
use k8s_openapi::api::networking::v1::{Ingress, IngressLoadBalancerIngress};
use serde_json::json;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::addresses::{PublishedAddresses, ServiceAddresses};
use crate::fleet::Snapshot;

/// How long after a failed read or write the status is tried again.
pub const INGRESS_STATUS_RETRY: Duration = Duration::from_secs(10);

type Addresses = Vec<IngressLoadBalancerIngress>;

/// Keeps the status of served Ingresses equal to the publish Service's
/// load-balancer `addresses` while `leading` is `Some`, until `stop`
/// resolves. While the Service is unread or missing, Ingress status is left
/// alone.
pub async fn publish_status(
    client: Client,
    mut addresses: watch::Receiver<PublishedAddresses>,
    mut snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    mut leading: watch::Receiver<Option<u64>>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    // What each Ingress's status is known to say (read once, then written).
    let mut known: BTreeMap<ObjectKey, Addresses> = BTreeMap::new();
    let mut addresses_open = true;
    loop {
        let mut failed = false;
        let snapshot = snapshots.borrow_and_update().clone();
        let published = addresses.borrow_and_update().clone();
        if leading.borrow_and_update().is_some()
            && let Some(snapshot) = snapshot
        {
            if let ServiceAddresses::Assigned(assigned) = &published.state {
                let assigned: Addresses = assigned
                    .iter()
                    .map(|a| IngressLoadBalancerIngress {
                        ip: a.ip.clone(),
                        hostname: a.hostname.clone(),
                        ports: None,
                    })
                    .collect();
                let served = snapshot.served();
                for key in served {
                    failed |= !sync_one(&client, key, &assigned, &mut known).await;
                }
                known.retain(|key, _| served.contains(key));
            }
        } else {
            // A new leader reads again: another one may have written meanwhile.
            known.clear();
        }
        tokio::select! {
            () = &mut stop => return,
            changed = snapshots.changed() => if changed.is_err() { return },
            changed = leading.changed() => if changed.is_err() { return },
            changed = addresses.changed(), if addresses_open => addresses_open = changed.is_ok(),
            () = tokio::time::sleep(INGRESS_STATUS_RETRY), if failed => {}
        }
    }
}

/// Writes one Ingress's addresses if they differ; `false` when a read or
/// write failed.
async fn sync_one(
    client: &Client,
    key: &ObjectKey,
    addresses: &Addresses,
    known: &mut BTreeMap<ObjectKey, Addresses>,
) -> bool {
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
            Ok(None) => return true,
            Err(e) => {
                warn!(ingress = %key, "cannot read the Ingress status: {e}");
                return false;
            }
        }
    }
    if known.get(key) == Some(addresses) {
        return true;
    }
    let patch = json!({ "status": { "loadBalancer": { "ingress": addresses } } });
    match ingresses
        .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {
            info!(ingress = %key, "status.loadBalancer written");
            known.insert(key.clone(), addresses.clone());
            true
        }
        Err(e) => {
            debug!(ingress = %key, "status write failed: {e}");
            known.remove(key);
            false
        }
    }
}
