//! The admin listener of `hawser run` and `hawser controller`: liveness,
//! readiness, status, metrics.
//!
//! | path       | answers                                                            |
//! |------------|--------------------------------------------------------------------|
//! | `/healthz` | 200 while the process runs                                         |
//! | `/readyz`  | 200 once a rendered, verified configuration serves (`run`), or    |
//! |            | once every agent holds the newest render (`controller`); 503 before |
//! | `/status`  | JSON: generations desired and applied, last error, counters       |
//! | `/metrics` | Prometheus text format                                            |

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hawser_agent::{AgentHandle, AgentStatus};
use hawser_pki::tls::{SharedMaterial, TlsStatus};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::metrics::Metrics;
use hawser_controller::cycle::ControllerStatus;
use hawser_controller::fleet::FleetStatus;

#[derive(Debug, Clone)]
pub struct AdminState {
    /// The in-process agent (`hawser run`).
    pub agent: Option<AgentHandle>,
    /// The agents pushed to (`hawser controller`).
    pub fleet: Option<watch::Receiver<FleetStatus>>,
    /// The controller's own tls directory (`hawser controller`).
    pub tls: Option<SharedMaterial>,
    pub controller: watch::Receiver<ControllerStatus>,
    pub metrics: Arc<Metrics>,
}

/// For a process that runs no controller (`hawser agent`): a controller
/// status that never changes, and the sender that keeps it open (metrics
/// follow it until it closes).
pub fn no_controller() -> (
    watch::Sender<ControllerStatus>,
    watch::Receiver<ControllerStatus>,
) {
    watch::channel(ControllerStatus::default())
}

impl AdminState {
    fn ready(&self) -> bool {
        let agent_ready = self
            .agent
            .as_ref()
            .is_none_or(|a| a.status().borrow().is_ready());
        // A leader is ready when every agent serves its newest render; a
        // standby (not leading) once it renders, so it can take over and
        // answer the webhook.
        let fleet_ready = self.fleet.as_ref().is_none_or(|f| {
            let generation = self.controller.borrow().generation;
            let fleet = f.borrow();
            generation.is_some_and(|g| fleet.epoch.is_none() || fleet.converged_at(g.get()))
        });
        agent_ready && fleet_ready
    }
}

/// The `/status` document.
#[derive(Debug, Serialize)]
pub struct StatusDocument {
    pub ready: bool,
    pub desired_generation: Option<hawser_plan::Generation>,
    pub applied_generation: Option<hawser_plan::Generation>,
    pub last_error: Option<String>,
    pub reloads: u64,
    pub controller: ControllerStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsStatus>,
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
    if state.ready() {
        (StatusCode::OK, "ready\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "no verified configuration is serving yet\n",
        )
    }
}

async fn status(State(state): State<AdminState>) -> impl IntoResponse {
    let agent = state.agent.as_ref().map(|a| a.status().borrow().clone());
    let fleet = state.fleet.as_ref().map(|f| f.borrow().clone());
    let controller = state.controller.borrow().clone();
    let last_error = controller
        .render_error
        .clone()
        .or_else(|| agent.as_ref().and_then(|a| a.last_error.clone()))
        .or_else(|| {
            fleet
                .as_ref()
                .and_then(|f| f.agents.values().find_map(|a| a.last_error.clone()))
        });
    let document = StatusDocument {
        ready: state.ready(),
        desired_generation: controller.generation,
        applied_generation: agent.as_ref().and_then(|a| a.applied_generation),
        last_error,
        reloads: agent.as_ref().map_or(0, |a| a.reloads),
        controller,
        agent,
        fleet,
        tls: state.tls.as_ref().map(SharedMaterial::status),
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
        state.metrics.scrape(state.agent.as_ref()).await,
    )
}
