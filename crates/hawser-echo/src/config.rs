//! What the echo server listens on and who it says it is.

use std::net::SocketAddr;

/// Where the echo server listens and the identity it reports in every reply.
///
/// The identity fields are free text; in a cluster they come from the
/// downward API (pod name, namespace) and the manifest (service, ingress).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoConfig {
    /// Address to listen on; port 0 picks a free port (see [`crate::EchoServer::local_addr`]).
    pub listen: SocketAddr,
    /// Namespace reported as `namespace`.
    pub namespace: String,
    /// Pod name reported as `pod` and in the `x-echo-pod` response header.
    pub pod: String,
    /// Service name reported as `service`.
    pub service: String,
    /// Ingress (or route) name reported as `ingress`.
    pub ingress: String,
}

impl EchoConfig {
    /// A config listening on `listen` with an empty identity.
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            namespace: String::new(),
            pod: String::new(),
            service: String::new(),
            ingress: String::new(),
        }
    }
}
