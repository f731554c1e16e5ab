//! TLS-only transport for the contract: a listener that completes TLS 1.3
//! handshakes before tonic sees a connection, and a client connection that
//! remembers the server's certificate chain so it can be re-checked before
//! every call. The rustls configurations (who is trusted, which identity is
//! shown) come from the caller; there is no way to build either side without
//! one.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};
use tracing::{debug, warn};

/// How long a peer may take to complete its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("invalid agent address {addr}: {reason}")]
    Address { addr: String, reason: String },
}

/// Accepts TCP connections on `listener` and yields those that complete a
/// TLS handshake under `tls`; failed handshakes are logged with the peer's
/// address and rustls' reason, and never reach the service.
pub fn incoming(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
) -> ReceiverStream<io::Result<TlsStream<TcpStream>>> {
    let (tx, rx) = mpsc::channel(16);
    let acceptor = TlsAcceptor::from(tls);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    warn!("control listener accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            // An Apply's answer is a few small writes (HTTP/2 headers, data,
            // trailers, each a TLS record): held back by Nagle's algorithm
            // until the controller acknowledged the first, which it delays,
            // an answer came about 40 ms late whenever versions followed
            // each other closely, and the controller's next push with it.
            if let Err(e) = tcp.set_nodelay(true) {
                debug!(%peer, "cannot turn Nagle's algorithm off: {e}");
            }
            let acceptor = acceptor.clone();
            let out = tx.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => {
                        let _ = out.send(Ok(stream)).await;
                    }
                    Ok(Err(e)) => {
                        warn!(%peer, "control connection refused: TLS handshake failed: {e}")
                    }
                    Err(_) => debug!(%peer, "control connection dropped: TLS handshake timed out"),
                }
            });
            if tx.is_closed() {
                return;
            }
        }
    });
    ReceiverStream::new(rx)
}

/// The server's certificate chain as presented in the handshake.
#[derive(Debug, Clone, Default)]
pub struct PeerChain(Arc<Mutex<Vec<CertificateDer<'static>>>>);

impl PeerChain {
    pub fn get(&self) -> Vec<CertificateDer<'static>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, chain: &[CertificateDer<'_>]) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) =
            chain.iter().map(|c| c.clone().into_owned()).collect();
    }
}

/// One established client connection.
#[derive(Debug, Clone)]
pub struct Connection {
    pub channel: Channel,
    /// What the server presented, for the per-call re-check.
    pub peer: PeerChain,
}

/// Connects to `addr` now (TCP, then the TLS 1.3 handshake under `tls`),
/// failing fast when the agent is down or the handshake is refused.
/// `server_name` is sent as SNI; who is accepted is up to `tls`'s verifier.
pub async fn connect(
    addr: SocketAddr,
    server_name: &str,
    tls: Arc<rustls::ClientConfig>,
    timeout: Duration,
) -> Result<Connection, TransportError> {
    let name =
        ServerName::try_from(server_name.to_owned()).map_err(|e| TransportError::Address {
            addr: addr.to_string(),
            reason: format!("agent name {server_name:?}: {e}"),
        })?;
    // The scheme only labels requests: the connector below always speaks TLS.
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| TransportError::Address {
            addr: addr.to_string(),
            reason: e.to_string(),
        })?
        .connect_timeout(timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(20))
        .keep_alive_timeout(Duration::from_secs(10));
    let peer = PeerChain::default();
    let connector = TlsConnector::from(tls);
    let seen = peer.clone();
    let channel = endpoint
        .connect_with_connector(tower::service_fn(move |_uri| {
            let connector = connector.clone();
            let name = name.clone();
            let seen = seen.clone();
            async move {
                let tcp = TcpStream::connect(addr).await?;
                tcp.set_nodelay(true)?;
                let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, connector.connect(name, tcp))
                    .await
                    .map_err(|_| {
                        io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out")
                    })??;
                seen.set(tls.get_ref().1.peer_certificates().unwrap_or_default());
                Ok::<_, io::Error>(TokioIo::new(tls))
            }
        }))
        .await
        .map_err(|source| TransportError::Connect { addr, source })?;
    Ok(Connection { channel, peer })
}

/// The full reason behind a transport error, sources included (tonic's
/// top-level message alone is "transport error").
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let line = inner.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests;
