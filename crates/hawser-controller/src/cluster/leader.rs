//! Leader election on a Lease (kube-lease-manager): only the leader pushes.
//! The fencing epoch sent to agents is the Lease's `leaseTransitions` at
//! the moment this process took it, so a deposed leader's pushes carry a
//! lower epoch than its successor's and agents refuse them.
//!
//! ```text
//!  LeaseManager::watch ──true──► read the Lease ──► Some(leaseTransitions) ──► fleet pushes
//!                     ──false─────────────────────► None ─────────────────────► fleet stops pushing
//! ```

use std::time::Duration;

use ::kube::Api;
use ::kube::Client;
use k8s_openapi::api::coordination::v1::Lease;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tracing::{info, warn};

/// Which Lease, and who this process is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOptions {
    pub namespace: String,
    pub name: String,
    /// This process (the pod name).
    pub identity: String,
    /// How long a leader's claim lasts without renewal.
    pub duration: Duration,
    /// How long before expiry the leader renews.
    pub grace: Duration,
}

impl LeaseOptions {
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        LeaseOptions {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            duration: Duration::from_secs(15),
            grace: Duration::from_secs(5),
        }
    }
}

/// Takes part in the election until `stop` resolves (then releases the
/// Lease, so a successor takes over at once). `leading` carries
/// `Some(epoch)` while this process leads.
pub async fn lead(
    client: Client,
    options: LeaseOptions,
    leading: watch::Sender<Option<u64>>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        let built = LeaseManagerBuilder::new(client.clone(), &options.name)
            .with_namespace(&options.namespace)
            .with_identity(&options.identity)
            .with_duration(options.duration.as_secs().max(1))
            .with_grace(options.grace.as_secs().max(1))
            .build()
            .await;
        let manager = match built {
            Ok(manager) => manager,
            Err(e) => {
                warn!(lease = %options.name, "leader election cannot start: {e}; retrying");
                tokio::select! {
                    () = &mut stop => return,
                    () = tokio::time::sleep(Duration::from_secs(2)) => continue,
                }
            }
        };
        let (mut is_leader, task) = manager.watch().await;
        loop {
            let now = *is_leader.borrow_and_update();
            let epoch = if now {
                epoch_of(&client, &options).await
            } else {
                None
            };
            if leading.send_replace(epoch) != epoch {
                match epoch {
                    Some(epoch) => info!(lease = %options.name, epoch, "leading"),
                    None => info!(lease = %options.name, "not leading"),
                }
            }
            tokio::select! {
                () = &mut stop => {
                    leading.send_replace(None);
                    // Dropping the receiver makes the manager release the Lease.
                    drop(is_leader);
                    let _ = task.await;
                    return;
                }
                changed = is_leader.changed() => if changed.is_err() { break },
            }
        }
        // The manager gave up (an API error it does not retry): start over.
        leading.send_replace(None);
        let _ = task.await;
    }
}

/// The Lease's transitions count, read right after taking it: it grows with
/// every change of holder, so it orders leaders.
async fn epoch_of(client: &Client, options: &LeaseOptions) -> Option<u64> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), &options.namespace);
    match leases.get(&options.name).await {
        Ok(lease) => {
            let transitions = lease.spec.and_then(|s| s.lease_transitions).unwrap_or(0);
            Some(u64::try_from(transitions).unwrap_or(0).max(1))
        }
        Err(e) => {
            warn!(lease = %options.name, "cannot read the Lease for the epoch: {e}; not pushing");
            None
        }
    }
}

#[cfg(test)]
mod tests;
