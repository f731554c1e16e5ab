//! The webhook's HTTPS endpoint: `POST /validate` takes an AdmissionReview
//! (admission.k8s.io/v1) and answers one, within the bounds of [`WebhookLimits`].

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::middleware;
use axum::routing::{get, post};
use hawser_crd::HawserConfig;
use hawser_haproxy::HaproxyBinary;
use hawser_render::{CertificatePem, RenderConfig};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use super::idle::IdleTimeout;
use super::limits::{self, ReviewGuard, WebhookLimits};
use super::reason::bounded;
use super::review::{Candidate, review};
use crate::fleet::Snapshot;

/// HTTP/2 streams one connection may have open.
const MAX_STREAMS: u32 = 32;
/// The most warnings one answer carries.
const MAX_WARNINGS: usize = 16;

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

/// The webhook's routes under the default [`WebhookLimits`].
pub fn router(state: WebhookState) -> Router {
    let limits = WebhookLimits::default();
    router_with(state, &limits, ReviewGuard::new(&limits))
}

/// The routes with `limits`: `/validate` takes a slot of `guard` and has
/// its body bounded.
pub fn router_with(state: WebhookState, limits: &WebhookLimits, guard: ReviewGuard) -> Router {
    let validate = post(validate)
        .layer(DefaultBodyLimit::max(limits.body_bytes))
        .layer(middleware::from_fn_with_state(guard, limits::guard));
    Router::new()
        .route("/validate", validate)
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
        Err(e) => {
            return Json(
                response
                    .deny(bounded(&format!("{name}: {e}")))
                    .into_review(),
            );
        }
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
            let warnings = verdict.warnings.iter().map(|w| bounded(w));
            response.warnings = Some(warnings.take(MAX_WARNINGS).collect());
        }
        Json(response.into_review())
    } else {
        let reason = bounded(verdict.reason.as_deref().unwrap_or_default());
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

/// Serves `router` over TLS (`tls` decides the certificate) under the
/// default [`WebhookLimits`], one task per connection, until `stop` resolves.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    stop: impl Future<Output = ()>,
) {
    serve_tls_with(listener, tls, router, WebhookLimits::default(), stop).await;
}

/// [`serve_tls`] with `limits`: a connection over the cap is closed at once,
/// and one that does not finish its handshake or headers in time is cut.
pub async fn serve_tls_with(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    limits: WebhookLimits,
    stop: impl Future<Output = ()>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let open = Arc::new(Semaphore::new(limits.connections));
    let limits = Arc::new(limits);
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
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            debug!(%peer, "webhook: {} connections open; closing this one", limits.connections);
            drop(tcp);
            continue;
        };
        let connection = Connection {
            acceptor: acceptor.clone(),
            service: TowerToHyperService::new(router.clone()),
            limits: Arc::clone(&limits),
        };
        tokio::spawn(async move {
            connection.serve(tcp, peer).await;
            drop(permit);
        });
    }
}

/// One accepted connection and what it is served with.
struct Connection {
    acceptor: TlsAcceptor,
    service: TowerToHyperService<Router>,
    limits: Arc<WebhookLimits>,
}

impl Connection {
    async fn serve(self, tcp: TcpStream, peer: std::net::SocketAddr) {
        let limits = &self.limits;
        let stream = match tokio::time::timeout(limits.handshake, self.acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                debug!(%peer, "webhook TLS handshake failed: {e}");
                return;
            }
            Err(_) => {
                debug!(%peer, "webhook TLS handshake took longer than {:?}", limits.handshake);
                return;
            }
        };
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read);
        builder
            .http2()
            .timer(TokioTimer::new())
            // Streams past the review slots are answered 503 at once.
            .max_concurrent_streams(MAX_STREAMS);
        let stream = IdleTimeout::new(stream, limits.idle);
        let served = builder.serve_connection(TokioIo::new(stream), self.service);
        tokio::pin!(served);
        let age = tokio::time::sleep(limits.connection_age);
        tokio::pin!(age);
        let mut closing = false;
        let result = loop {
            tokio::select! {
                result = served.as_mut() => break result,
                () = &mut age, if !closing => {
                    served.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        };
        if let Err(e) = result {
            debug!(%peer, "webhook connection: {e}");
        }
    }
}
