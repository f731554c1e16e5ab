//! The gRPC service an agent serves to its controller.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hawser_plan::Generation;
use hawser_proto::{MAX_FILE_BYTES, MAX_FILES, is_digest, v1};
use rustls_pki_types::CertificateDer;
use tokio::sync::{Mutex, broadcast, watch};
use tokio_stream::wrappers::WatchStream;
use tokio_stream::{Stream, StreamExt as _};
use tonic::{Request, Response, Status};
use tracing::{Instrument as _, info, warn};

use super::epoch::EpochFile;
use super::held::{ContentError, Held, HeldView};
use super::state::{Identity, result, state};
use crate::agent::{AgentHandle, Desired};
use crate::status::ApplyOutcome;
use crate::tree::TreeStore;

/// Re-checks the client's certificate chain (as presented when its
/// connection opened) against the trust of the moment; `Err` says why not.
pub type PeerCheck =
    Arc<dyn Fn(Option<&[CertificateDer<'static>]>) -> Result<(), String> + Send + Sync>;

#[derive(Clone)]
pub struct ControlConfig {
    /// This agent's name (its certificate's SAN).
    pub agent: String,
    /// Settings the controller must render for this agent (socket paths, ports).
    pub render_settings: BTreeMap<String, String>,
    /// Where the highest accepted leader epoch is kept.
    pub epoch_file: PathBuf,
    /// How long an Apply waits for its outcome (or its change live at runtime)
    /// before answering `scheduled`.
    pub apply_wait: Duration,
    pub peer_check: PeerCheck,
}

impl std::fmt::Debug for ControlConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlConfig")
            .field("agent", &self.agent)
            .field("render_settings", &self.render_settings)
            .field("epoch_file", &self.epoch_file)
            .field("apply_wait", &self.apply_wait)
            .finish_non_exhaustive()
    }
}

struct Fenced {
    epoch: EpochFile,
    held: Held,
}

#[derive(Clone)]
pub struct ControlService {
    agent: AgentHandle,
    identity: Arc<Identity>,
    apply_wait: Duration,
    peer_check: PeerCheck,
    /// One Apply at a time; the fence and the held version change together.
    fenced: Arc<Mutex<Fenced>>,
    /// What the fence holds, readable while an Apply holds the lock.
    view: Arc<watch::Sender<(HeldView, u64)>>,
    state: watch::Sender<v1::State>,
}

impl std::fmt::Debug for ControlService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlService")
            .field("agent", &self.identity.agent)
            .finish_non_exhaustive()
    }
}

impl ControlService {
    /// The held version starts as the one HAProxy serves; its generation is
    /// the newest on disk, so the next accepted generation is new everywhere.
    pub fn new(
        agent: AgentHandle,
        tree: &TreeStore,
        haproxy_version: String,
        config: ControlConfig,
    ) -> Self {
        let mut held = match tree.current().map(|v| (v, tree.read(v))) {
            Some((_, Ok((files, plan)))) => Held::of(0, &files, &plan),
            Some((version, Err(e))) => {
                warn!(
                    "cannot read the served version {version}: {e}; every file will be asked for"
                );
                Held::default()
            }
            None => Held::default(),
        };
        held.generation = agent.next_generation().previous().get();
        let identity = Arc::new(Identity {
            agent: config.agent.clone(),
            instance: instance_id(),
            haproxy_version,
            render_settings: config.render_settings.clone(),
        });
        let epoch = EpochFile::open(&config.epoch_file);
        let initial = state(
            &identity,
            &agent.status().borrow(),
            &held.view(),
            epoch.get(),
        );
        let (state_tx, _) = watch::channel(initial);
        let (view, _) = watch::channel((held.view(), epoch.get()));
        let service = ControlService {
            agent,
            identity,
            apply_wait: config.apply_wait,
            peer_check: config.peer_check,
            fenced: Arc::new(Mutex::new(Fenced { epoch, held })),
            view: Arc::new(view),
            state: state_tx,
        };
        tokio::spawn(
            service
                .clone()
                .publish_state()
                .instrument(tracing::info_span!("agent_state_publisher")),
        );
        service
    }

    pub fn into_server(self) -> v1::agent_server::AgentServer<Self> {
        v1::agent_server::AgentServer::new(self)
            .max_decoding_message_size(hawser_proto::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(hawser_proto::MAX_MESSAGE_BYTES)
    }

    /// The state as the controller sees it (also for the local state socket).
    pub fn state(&self) -> v1::State {
        self.state.borrow().clone()
    }

    /// Recomputes the state on every agent status or fence change.
    async fn publish_state(self) {
        let mut status = self.agent.status();
        let mut changed = self.view.subscribe();
        loop {
            let next = {
                let view = changed.borrow_and_update();
                state(&self.identity, &status.borrow_and_update(), &view.0, view.1)
            };
            self.state.send_if_modified(|s| {
                let differs = *s != next;
                *s = next;
                differs
            });
            tokio::select! {
                r = status.changed() => if r.is_err() { return },
                r = changed.changed() => if r.is_err() { return },
            }
        }
    }

    fn authorize<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let chain = request.peer_certs();
        (self.peer_check)(chain.as_deref().map(Vec::as_slice)).map_err(|reason| {
            warn!(peer = ?request.remote_addr(), "control call refused: {reason}");
            Status::unauthenticated(reason)
        })
    }

    async fn apply_inner(&self, request: v1::ApplyRequest) -> Result<v1::ApplyResponse, Status> {
        let received = std::time::Instant::now();
        check_shape(&request)?;
        let mut fenced = self.fenced.lock().await;
        let refuse = |outcome: v1::Outcome, message: String, fenced: &Fenced| {
            warn!(
                generation = request.generation,
                "apply refused ({}): {message}",
                outcome.label()
            );
            v1::ApplyResponse {
                result: Some(v1::ApplyResult {
                    generation: request.generation,
                    outcome: outcome.into(),
                    message,
                    duration_ms: 0,
                }),
                missing_digests: Vec::new(),
                state: Some(self.state_with(fenced)),
            }
        };
        if request.epoch < fenced.epoch.get() {
            let message = format!(
                "leader epoch {} is older than {} (a newer controller leads); nothing written",
                request.epoch,
                fenced.epoch.get()
            );
            return Ok(refuse(v1::Outcome::StaleEpoch, message, &fenced));
        }
        if request.expected_generation != fenced.held.generation {
            let message = format!(
                "expected generation {} but the agent holds {}; nothing written",
                request.expected_generation, fenced.held.generation
            );
            return Ok(refuse(v1::Outcome::BaselineMismatch, message, &fenced));
        }
        let (files, plan, next) = match fenced.held.resolve(&request) {
            Ok(resolved) => resolved,
            Err(ContentError::Missing(missing)) => {
                let mut response = refuse(
                    v1::Outcome::NeedFiles,
                    format!("{} blob(s) missing; nothing written", missing.len()),
                    &fenced,
                );
                response.missing_digests = missing;
                return Ok(response);
            }
            Err(ContentError::Invalid(reason)) => {
                return Err(Status::invalid_argument(reason));
            }
            Err(ContentError::Format(error)) => {
                let message = format!("{error}; nothing written");
                return Ok(refuse(v1::Outcome::Rejected, message, &fenced));
            }
        };
        fenced.epoch.raise(request.epoch).map_err(|e| {
            Status::unavailable(format!(
                "cannot store the leader epoch: {e}; nothing applied"
            ))
        })?;
        fenced.held = next;
        self.view
            .send_replace((fenced.held.view(), fenced.epoch.get()));
        let generation = request.generation;
        info!(
            generation,
            epoch = request.epoch,
            controller = request.controller,
            blobs = request.blobs.len(),
            // Digests checked, files and the plan decoded: what a version
            // waits for before the agent applies it.
            resolve_ms = received.elapsed().as_millis() as u64,
            "apply accepted"
        );
        let mut outcomes = self.agent.outcomes();
        let mut status = self.agent.status();
        self.agent.submit(Desired {
            generation: Generation::new(generation),
            files: files.into(),
            plan,
        });
        let waited = tokio::time::timeout(self.apply_wait, async {
            loop {
                tokio::select! {
                    received = outcomes.recv() => match received {
                        Ok(outcome) if outcome.generation.get() >= generation => {
                            return Some(Answer::Outcome(outcome));
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                    changed = status.changed() => {
                        if changed.is_err() {
                            return None;
                        }
                        if status.borrow_and_update().is_live(generation) {
                            return Some(Answer::Live);
                        }
                    }
                }
            }
        })
        .await;
        let result = match waited {
            Ok(Some(Answer::Outcome(outcome))) => result(&outcome),
            Ok(Some(Answer::Live)) => v1::ApplyResult {
                generation,
                outcome: v1::Outcome::Runtime.into(),
                message: "live through the runtime API; the full check of its tree follows, \
                          and the state reports its end"
                    .into(),
                duration_ms: u64::try_from(received.elapsed().as_millis()).unwrap_or(u64::MAX),
            },
            _ => v1::ApplyResult {
                generation,
                outcome: v1::Outcome::Scheduled.into(),
                message: "accepted; waiting for a reload slot".into(),
                duration_ms: 0,
            },
        };
        Ok(v1::ApplyResponse {
            result: Some(result),
            missing_digests: Vec::new(),
            state: Some(self.state_with(&fenced)),
        })
    }

    fn state_with(&self, fenced: &Fenced) -> v1::State {
        state(
            &self.identity,
            &self.agent.status().borrow(),
            &fenced.held.view(),
            fenced.epoch.get(),
        )
    }
}

/// What an Apply answers on: the version's outcome, or its change live at
/// runtime before the full check of its tree ended (the controller's next
/// version need not wait for that check: the agent leaves it to the next
/// version, whose tree holds this change too).
enum Answer {
    Outcome(ApplyOutcome),
    Live,
}

/// Refuses malformed requests before anything is looked at.
fn check_shape(request: &v1::ApplyRequest) -> Result<(), Status> {
    let bad = |reason: String| Err(Status::invalid_argument(reason));
    if request.generation <= request.expected_generation {
        return bad(format!(
            "generation {} must be newer than expected generation {}",
            request.generation, request.expected_generation
        ));
    }
    if request.files.len() > MAX_FILES {
        return bad(format!(
            "{} files exceed the limit of {MAX_FILES}",
            request.files.len()
        ));
    }
    if !is_digest(&request.plan_digest) {
        return bad("plan_digest is not a sha256 hex digest".into());
    }
    for entry in &request.files {
        if !is_digest(&entry.digest) {
            return bad(format!("{}: digest is not a sha256 hex digest", entry.path));
        }
        let plain = !entry.path.is_empty()
            && std::path::Path::new(&entry.path)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain || entry.path.chars().any(char::is_control) {
            return bad(format!("{:?} is not a plain relative path", entry.path));
        }
    }
    for blob in &request.blobs {
        if blob.content.len() > MAX_FILE_BYTES {
            return bad(format!(
                "blob {} is {} bytes, over the limit of {MAX_FILE_BYTES}",
                blob.digest,
                blob.content.len()
            ));
        }
    }
    if request.edits.len() > MAX_FILES {
        return bad(format!(
            "{} edits exceed the limit of {MAX_FILES}",
            request.edits.len()
        ));
    }
    for edit in &request.edits {
        if !is_digest(&edit.digest) || !is_digest(&edit.base) {
            return bad(format!(
                "edit {:?} of {:?}: not sha256 hex digests",
                edit.digest, edit.base
            ));
        }
        if edit.inserted.len() > MAX_FILE_BYTES {
            return bad(format!(
                "edit {} inserts {} bytes, over the limit of {MAX_FILE_BYTES}",
                edit.digest,
                edit.inserted.len()
            ));
        }
    }
    Ok(())
}

fn instance_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos:x}", std::process::id())
}

type StateStream = Pin<Box<dyn Stream<Item = Result<v1::State, Status>> + Send>>;

#[tonic::async_trait]
impl v1::agent_server::Agent for ControlService {
    async fn get_state(
        &self,
        request: Request<v1::StateRequest>,
    ) -> Result<Response<v1::State>, Status> {
        self.authorize(&request)?;
        Ok(Response::new(self.state()))
    }

    type WatchStateStream = StateStream;

    async fn watch_state(
        &self,
        request: Request<v1::StateRequest>,
    ) -> Result<Response<StateStream>, Status> {
        self.authorize(&request)?;
        let check = self.peer_check.clone();
        let chain = request.peer_certs();
        // Trust is re-checked with every update, so a stream opened under the
        // previous CA ends when that CA stops being trusted.
        let stream = WatchStream::new(self.state.subscribe()).map(move |state| {
            check(chain.as_deref().map(Vec::as_slice))
                .map(|()| state)
                .map_err(Status::unauthenticated)
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn apply(
        &self,
        request: Request<v1::ApplyRequest>,
    ) -> Result<Response<v1::ApplyResponse>, Status> {
        self.authorize(&request)?;
        self.apply_inner(request.into_inner())
            .await
            .map(Response::new)
    }
}

#[cfg(test)]
mod tests;
