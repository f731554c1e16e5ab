//! What one caller can cost the webhook. It authenticates no one, so every
//! resource a connection or a request holds is bounded, and over a bound the
//! answer is an error at once (the API server's `failurePolicy` then
//! decides), never a queue.
//!
//! ```text
//!  accept ──► connections cap ──► TLS handshake (timeout) ──► idle timeout, HTTP/1.1
//!             (closed at once)     header read timeout, connection age (then a graceful close)
//!  POST /validate ──► review slots (503 at once) ──► request timeout (504) ──► body limit (413)
//! ```

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The webhook's bounds; [`WebhookLimits::default`] is what the controller serves with.
#[derive(Debug, Clone)]
pub struct WebhookLimits {
    /// From accept to the end of the TLS handshake.
    pub handshake: Duration,
    /// From the start of a request (or of an idle keep-alive wait) to the end
    /// of its headers (HTTP/1.1).
    pub header_read: Duration,
    /// One whole review: reading the body, rendering, `haproxy -c`.
    pub request: Duration,
    /// A connection on which no byte moves for this long is closed; more
    /// than `request`, so a review in progress is never cut.
    pub idle: Duration,
    /// After this a connection is closed gracefully (the API server
    /// reconnects); bounds idle HTTP/2 connections that send nothing.
    pub connection_age: Duration,
    /// The largest AdmissionReview body, in bytes.
    pub body_bytes: usize,
    /// Reviews that run at once.
    pub concurrent_reviews: usize,
    /// Connections open at once.
    pub connections: usize,
}

impl Default for WebhookLimits {
    fn default() -> Self {
        WebhookLimits {
            handshake: Duration::from_secs(5),
            header_read: Duration::from_secs(5),
            // Inside the API server's default webhook timeout (10 s); the
            // `haproxy -c` part has its own, shorter deadline.
            request: Duration::from_secs(8),
            idle: Duration::from_secs(10),
            connection_age: Duration::from_secs(300),
            // The API server's own limit on a request body (3 MiB).
            body_bytes: 3 * 1024 * 1024,
            concurrent_reviews: 4,
            connections: 128,
        }
    }
}

/// The review slots and the request deadline, shared by every request.
#[derive(Debug, Clone)]
pub struct ReviewGuard {
    slots: Arc<Semaphore>,
    request: Duration,
}

impl ReviewGuard {
    pub fn new(limits: &WebhookLimits) -> Self {
        ReviewGuard {
            slots: Arc::new(Semaphore::new(limits.concurrent_reviews)),
            request: limits.request,
        }
    }

    /// Takes a slot, if one is free (tests hold them to fill the webhook).
    pub fn try_slot(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.slots).try_acquire_owned().ok()
    }
}

/// Middleware: a free slot or 503 at once; the whole request within its deadline or 504.
pub async fn guard(State(guard): State<ReviewGuard>, request: Request, next: Next) -> Response {
    let Some(_slot) = guard.try_slot() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "too many admission reviews at once\n",
        )
            .into_response();
    };
    match tokio::time::timeout(guard.request, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "the admission review took longer than {:?}\n",
                guard.request
            ),
        )
            .into_response(),
    }
}
