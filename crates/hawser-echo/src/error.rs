//! The echo server's error type.

use std::{io, net::SocketAddr};

/// Why the echo server could not start or stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum EchoError {
    /// The listen address could not be bound.
    #[error("failed to bind echo server to {addr}")]
    Bind {
        /// The address from [`crate::EchoConfig::listen`].
        addr: SocketAddr,
        /// The underlying socket error.
        #[source]
        source: io::Error,
    },
    /// The bound listener could not report its address.
    #[error("failed to read the echo server's bound address")]
    LocalAddr(#[source] io::Error),
    /// The TLS certificate or key could not be used.
    #[error("invalid TLS certificate or key for the echo server: {0}")]
    Tls(String),
    /// The accept loop failed.
    #[error("echo server on {addr} stopped serving")]
    Serve {
        /// The address the server was bound to.
        addr: SocketAddr,
        /// The underlying I/O error.
        #[source]
        source: io::Error,
    },
}

impl EchoError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Bind { .. } => "bind",
            Self::LocalAddr(_) => "local_addr",
            Self::Tls(_) => "tls",
            Self::Serve { .. } => "serve",
        }
    }
}
