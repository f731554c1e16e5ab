//! The admin listener of `hawser run`: liveness, readiness, status, metrics.
//!
//! | path       | answers                                                            |
//! |------------|--------------------------------------------------------------------|
//! | `/healthz` | 200 while the process runs                                         |
//! | `/readyz`  | 200 once a rendered, verified configuration serves; 503 before    |
//! | `/status`  | JSON: generations desired and applied, last error, counters       |
//! | `/metrics` | Prometheus text format                                            |

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hawser_agent::{AgentHandle, AgentStatus};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::local::ControllerStatus;
use crate::metrics::Metrics;

#[derive(Debug, Clone)]
pub struct AdminState {
    pub agent: AgentHandle,
    pub controller: watch::Receiver<ControllerStatus>,
    pub metrics: Arc<Metrics>,
}

/// The `/status` document.
#[derive(Debug, Serialize)]
pub struct StatusDocument {
    pub ready: bool,
    pub desired_generation: Option<u64>,
    pub applied_generation: Option<u64>,
    pub last_error: Option<String>,
    pub reloads: u64,
    pub controller: ControllerStatus,
    pub agent: AgentStatus,
}

pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// Serves until `stop` resolves.
pub async fn serve(
    listener: TcpListener,
    state: AdminState,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(stop)
        .await
}

async fn readyz(State(state): State<AdminState>) -> impl IntoResponse {
    if state.agent.status().borrow().is_ready() {
        (StatusCode::OK, "ready\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "no verified configuration is serving yet\n",
        )
    }
}

async fn status(State(state): State<AdminState>) -> impl IntoResponse {
    let agent = state.agent.status().borrow().clone();
    let controller = state.controller.borrow().clone();
    let last_error = controller
        .render_error
        .clone()
        .or_else(|| agent.last_error.clone());
    let document = StatusDocument {
        ready: agent.is_ready(),
        desired_generation: controller.generation,
        applied_generation: agent.applied_generation,
        last_error,
        reloads: agent.reloads,
        controller,
        agent,
    };
    let body = serde_json::to_string_pretty(&document).unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], body)
}

async fn metrics(State(state): State<AdminState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.encode(),
    )
}
