//! The listener and the one handler that answers every request.

use std::{future::Future, net::SocketAddr, sync::Arc};

use axum::{
    Json, Router,
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, request::Parts},
    response::{IntoResponse, Response},
};
use tokio::net::TcpListener;

use crate::{
    EchoConfig, EchoError, body, grpc_stream,
    reply::{self, EchoReply, POD_HEADER},
    tls::TlsListener,
    websocket,
};

/// A bound echo server, not yet serving.
///
/// Binding first lets tests listen on port 0 and learn the real address
/// before any request is sent.
#[derive(Debug)]
pub struct EchoServer {
    listener: TcpListener,
    addr: SocketAddr,
    identity: Arc<EchoConfig>,
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl EchoServer {
    /// Binds `config.listen`.
    pub async fn bind(config: EchoConfig) -> Result<Self, EchoError> {
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| EchoError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let addr = listener.local_addr().map_err(EchoError::LocalAddr)?;
        Ok(Self {
            listener,
            addr,
            identity: Arc::new(config),
            tls: None,
        })
    }

    /// Serves over TLS with `tls` (see [`crate::tls_config`]) instead of in
    /// clear text.
    pub fn with_tls(mut self, tls: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The address actually bound (the chosen port when listening on port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves HTTP/1.1 and h2c (prior knowledge), or both over TLS, until
    /// `shutdown` resolves, then lets in-flight requests finish.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), EchoError> {
        let addr = self.addr;
        let router = Router::new().fallback(echo).with_state(self.identity);
        tracing::info!(%addr, tls = self.tls.is_some(), "echo server listening");
        match self.tls {
            None => axum::serve(self.listener, router)
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(|source| EchoError::Serve { addr, source })?,
            Some(tls) => {
                let listener =
                    TlsListener::new(self.listener, tls).map_err(EchoError::LocalAddr)?;
                axum::serve(listener, router)
                    .with_graceful_shutdown(shutdown)
                    .await
                    .map_err(|source| EchoError::Serve { addr, source })?
            }
        }
        tracing::info!(%addr, "echo server stopped");
        Ok(())
    }
}

/// Binds `config.listen` and serves until `shutdown` resolves.
pub async fn serve(
    config: EchoConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), EchoError> {
    EchoServer::bind(config).await?.run(shutdown).await
}

/// Answers any method on any path: a WebSocket upgrade with an echoing
/// WebSocket, a streaming gRPC call with its messages, anything else with
/// the [`EchoReply`] for the request once its body has been read whole.
async fn echo(State(identity): State<Arc<EchoConfig>>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let mut response = if websocket::is_upgrade(&parts) {
        tracing::info!(path = %parts.uri, "echo websocket");
        websocket::upgrade(&mut parts).await
    } else if grpc_stream::wants_stream(&parts) {
        tracing::info!(path = %parts.uri, "echo grpc stream");
        grpc_stream::answer(body)
    } else {
        reply_after_body(&parts, body, &identity).await
    };
    if let Ok(pod) = HeaderValue::from_str(&identity.pod) {
        response.headers_mut().insert(POD_HEADER, pod);
    }
    response
}

/// Reads the body to its end, then answers with the [`EchoReply`]: its
/// byte count and digest tell the client every byte arrived.
async fn reply_after_body(parts: &Parts, body: Body, identity: &EchoConfig) -> Response {
    let digest = match body::digest(body).await {
        Ok(digest) => digest,
        Err(broken) => {
            tracing::info!(error = %broken, "echo");
            return (StatusCode::BAD_REQUEST, format!("{broken}\n")).into_response();
        }
    };
    let reply = EchoReply::new(parts, &digest, identity);
    // One line a request: tests (and people) read who received what, as the
    // Gateway API conformance suite reads its mirror backend's logs.
    tracing::info!(method = %reply.method, path = %reply.path, host = %reply.host, "echo");
    let answer = reply::requested_delay(parts)
        .and_then(|delay| Ok((delay, reply::requested_status(parts)?)));
    match answer {
        Ok((delay, status)) => {
            tokio::time::sleep(delay).await;
            (status, Json(reply)).into_response()
        }
        Err(message) => (StatusCode::BAD_REQUEST, message).into_response(),
    }
}
