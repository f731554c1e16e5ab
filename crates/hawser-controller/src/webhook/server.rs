//! The webhook's HTTPS endpoint: `POST /validate` takes an AdmissionReview
//! (admission.k8s.io/v1) and answers one.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use hawser_crd::HawserConfig;
use hawser_haproxy::HaproxyBinary;
use hawser_render::{CertificatePem, RenderConfig};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use super::review::{Candidate, review};
use crate::fleet::Snapshot;

/// What the webhook judges against.
#[derive(Debug, Clone)]
pub struct WebhookState {
    /// The newest objects the controller rendered from, and the
    /// configuration it rendered them under.
    pub snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    /// The configuration until the first render.
    pub config: Arc<RenderConfig>,
    pub default_certificate: CertificatePem,
    /// Runs the gate's `haproxy -c` when present.
    pub haproxy: Option<HaproxyBinary>,
}

pub fn router(state: WebhookState) -> Router {
    Router::new()
        .route("/validate", post(validate))
        .route("/healthz", get(|| async { "ok\n" }))
        .with_state(state)
}

async fn validate(
    State(state): State<WebhookState>,
    Json(review_in): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    let request: AdmissionRequest<DynamicObject> = match review_in.try_into() {
        Ok(request) => request,
        Err(e) => {
            warn!("webhook: not an admission request: {e}");
            return Json(AdmissionResponse::invalid(e.to_string()).into_review());
        }
    };
    let response = AdmissionResponse::from(&request);
    let Some(object) = request.object.as_ref() else {
        return Json(response.into_review());
    };
    let name = format!(
        "{} {}/{}",
        request.kind.kind,
        request.namespace.as_deref().unwrap_or(""),
        request.name
    );
    let candidate = match candidate(&request.kind.kind, object) {
        Ok(Some(candidate)) => candidate,
        Ok(None) => return Json(response.into_review()),
        Err(e) => return Json(response.deny(format!("{name}: {e}")).into_review()),
    };
    let (store, config) = state.snapshots.borrow().as_ref().map_or_else(
        || (Arc::default(), Arc::clone(&state.config)),
        |s| (Arc::clone(&s.store), Arc::clone(&s.config)),
    );
    let verdict = review(
        &store,
        &config,
        &state.default_certificate,
        state.haproxy.as_ref(),
        &candidate,
    )
    .await;
    if verdict.allowed {
        debug!("webhook: admitted {name}");
        let mut response = response;
        if !verdict.warnings.is_empty() {
            response.warnings = Some(verdict.warnings);
        }
        Json(response.into_review())
    } else {
        let reason = verdict.reason.unwrap_or_default();
        info!("webhook: denied {name}: {reason}");
        Json(response.deny(reason).into_review())
    }
}

fn candidate(kind: &str, object: &DynamicObject) -> Result<Option<Candidate>, String> {
    let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
    Ok(match kind {
        "Ingress" => Some(Candidate::Ingress(Box::new(
            serde_json::from_value(value).map_err(|e| format!("not a valid Ingress: {e}"))?,
        ))),
        "HawserConfig" => {
            let config: HawserConfig = serde_json::from_value(value)
                .map_err(|e| format!("not a valid HawserConfig: {e}"))?;
            Some(Candidate::Config(Box::new(config.spec)))
        }
        _ => None,
    })
}

/// Serves `router` over TLS (`tls` decides the certificate), one task per
/// connection, until `stop` resolves.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    stop: impl Future<Output = ()>,
) {
    let acceptor = TlsAcceptor::from(tls);
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    warn!("webhook accept failed: {e}");
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let stream = match acceptor.accept(tcp).await {
                Ok(stream) => stream,
                Err(e) => {
                    debug!(%peer, "webhook TLS handshake failed: {e}");
                    return;
                }
            };
            if let Err(e) = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                debug!(%peer, "webhook connection: {e}");
            }
        });
    }
}
