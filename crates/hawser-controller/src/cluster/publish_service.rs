//! Follows the publish Service (`--publish-service`): a watch on that one
//! Service, its `status.loadBalancer.ingress` published as
//! [`PublishedAddresses`] whenever it changes, for the Ingress and Gateway
//! status writers.
//!
//! ```text
//!  watcher(Service ns, metadata.name=<name>) ──► addresses (sorted) ──changed?──► watch::Sender<PublishedAddresses>
//! ```
//!
//! Every replica follows it, leader or not, so that a new leader knows the
//! addresses at once. A failing watch is retried with kube's backoff; the
//! last addresses stay published meanwhile.

use ::kube::runtime::WatchStreamExt as _;
use ::kube::runtime::watcher::{self, Event, watcher};
use ::kube::{Api, Client};
use hawser_model::ObjectKey;
use k8s_openapi::api::core::v1::Service;
use tokio::sync::watch;
use tokio_stream::StreamExt as _;
use tracing::{info, warn};

use crate::addresses::{LoadBalancerAddress, PublishedAddresses, ServiceAddresses};

/// Publishes `service`'s addresses on `addresses` until `stop` resolves.
pub async fn follow_publish_service(
    client: Client,
    service: ObjectKey,
    addresses: watch::Sender<PublishedAddresses>,
    stop: impl Future<Output = ()>,
) {
    let api: Api<Service> = Api::namespaced(client, &service.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", service.name));
    let events = watcher(api, config).default_backoff();
    let mut events = std::pin::pin!(events);
    tokio::pin!(stop);
    // The list in progress: the Service if it was listed.
    let mut listing: Option<Option<ServiceAddresses>> = None;
    let mut last_error: Option<String> = None;
    loop {
        let event = tokio::select! {
            () = &mut stop => return,
            event = events.next() => match event {
                Some(event) => event,
                None => return,
            },
        };
        let state = match event {
            Ok(Event::Init) => {
                listing = Some(None);
                continue;
            }
            Ok(Event::InitApply(svc)) => {
                listing = Some(Some(ServiceAddresses::Assigned(addresses_of(&svc))));
                continue;
            }
            Ok(Event::InitDone) => listing
                .take()
                .flatten()
                .unwrap_or(ServiceAddresses::Missing),
            Ok(Event::Apply(svc)) => ServiceAddresses::Assigned(addresses_of(&svc)),
            Ok(Event::Delete(_)) => ServiceAddresses::Missing,
            Err(error) => {
                let error = error.to_string();
                if last_error.as_ref() != Some(&error) {
                    warn!(service = %service, "cannot watch the publish Service: {error}");
                }
                last_error = Some(error);
                continue;
            }
        };
        last_error = None;
        let changed = addresses.send_if_modified(|current| {
            if current.state == state {
                return false;
            }
            current.state = state.clone();
            true
        });
        if changed {
            match &state {
                ServiceAddresses::Missing => {
                    warn!(service = %service, "the publish Service does not exist")
                }
                ServiceAddresses::Assigned(list) => {
                    info!(service = %service, "publish Service addresses: {}", describe(list))
                }
                ServiceAddresses::Unread => {}
            }
        }
    }
}

/// The Service's `status.loadBalancer.ingress`, sorted.
pub fn addresses_of(service: &Service) -> Vec<LoadBalancerAddress> {
    let mut addresses: Vec<LoadBalancerAddress> = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .map(|ingress| {
            ingress
                .iter()
                .map(|i| LoadBalancerAddress {
                    ip: i.ip.clone(),
                    hostname: i.hostname.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    addresses.sort();
    addresses.dedup();
    addresses
}

fn describe(addresses: &[LoadBalancerAddress]) -> String {
    if addresses.is_empty() {
        return "none yet".to_string();
    }
    addresses
        .iter()
        .flat_map(|a| a.ip.iter().chain(a.hostname.iter()))
        .cloned()
        .collect::<Vec<_>>()
        .join(", ")
}
