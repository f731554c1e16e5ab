//! The addresses clients reach HAProxy on: the publish Service's
//! `status.loadBalancer.ingress`, followed as it changes. Ingress status
//! copies them; Gateway status lists them as `IPAddress` and `Hostname`
//! addresses.
//!
//! ```text
//!  publish Service ──watch──► PublishedAddresses ──┬─► Ingress status.loadBalancer
//!  (kube::follow_publish_service)   (watch channel) └─► Gateway status.addresses, Programmed
//! ```

use hawser_model::ObjectKey;

/// What the publish Service says about its addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedAddresses {
    /// The Service (`--publish-service`).
    pub service: ObjectKey,
    pub state: ServiceAddresses,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceAddresses {
    /// Not read yet: writers leave addresses as the objects say.
    Unread,
    /// The Service does not exist.
    Missing,
    /// Its load-balancer addresses, sorted; empty until one is assigned.
    Assigned(Vec<LoadBalancerAddress>),
}

/// One `status.loadBalancer.ingress` entry: an IP, a hostname, or both.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LoadBalancerAddress {
    pub ip: Option<String>,
    pub hostname: Option<String>,
}

impl PublishedAddresses {
    /// `service`, before it has been read.
    pub fn unread(service: ObjectKey) -> Self {
        PublishedAddresses {
            service,
            state: ServiceAddresses::Unread,
        }
    }
}
