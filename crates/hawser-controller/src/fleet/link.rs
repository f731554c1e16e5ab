//! One agent's link: keep a trusted connection, follow its state, push
//! whenever it does not hold the render meant for it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hawser_proto::transport::{self, Connection, error_chain};
use hawser_proto::v1;
use hawser_proto::v1::agent_client::AgentClient;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_stream::StreamExt as _;
use tonic::transport::Channel;
use tracing::{Instrument as _, debug, info, warn};

use super::build::Renders;
use super::push::{Sent, push};
use super::{AgentLinkStatus, AgentTarget, FleetConfig, FleetStatus, Snapshot};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a link has no connection to its agent (its `last_error`).
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("cannot reach agent {agent}: {}", error_chain(.source))]
    Unreachable {
        agent: String,
        #[source]
        source: transport::TransportError,
    },
    #[error("agent {agent} refused the connection: {} (the agent's log says why)", error_chain(.source))]
    Refused {
        agent: String,
        #[source]
        source: tonic::Status,
    },
    #[error("agent {agent} did not answer")]
    Silent { agent: String },
    #[error("agent {agent} sent no state")]
    NoState { agent: String },
    #[error("agent {agent} closed the state stream")]
    Closed { agent: String },
}

impl LinkError {
    /// A stable category for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            LinkError::Unreachable { .. } => "unreachable",
            LinkError::Refused { .. } => "refused",
            LinkError::Silent { .. } => "silent",
            LinkError::NoState { .. } => "no_state",
            LinkError::Closed { .. } => "closed",
        }
    }
}

pub struct Link {
    pub target: AgentTarget,
    pub key: String,
    pub config: FleetConfig,
    pub renders: Arc<Renders>,
    pub snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    pub status: Arc<watch::Sender<FleetStatus>>,
}

/// An open, trusted connection and the agent's state as it streams in.
struct Live {
    connection: Connection,
    client: AgentClient<Channel>,
    /// The TLS revision it was opened under.
    revision: String,
    state: watch::Receiver<v1::State>,
    reader: JoinHandle<()>,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Link {
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut live: Option<Live> = None;
        let mut tls_revision = self.config.tls.revision.clone();
        let mut leader = self.config.leader.clone();
        // A static controller may drop its sender: the last value stays.
        let mut leader_open = true;
        loop {
            if *stop.borrow() {
                return;
            }
            self.upkeep(&mut live).await;
            if let Some(open) = live.as_mut()
                && !self.reconcile(open).await
            {
                live = None;
                self.update(AgentLinkStatus::lose_connection);
            }
            let state_changed = async {
                match live.as_mut() {
                    Some(open) => {
                        let _ = open.state.changed().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = stop.changed() => return,
                _ = self.snapshots.changed() => {}
                _ = tls_revision.changed() => {}
                changed = leader.changed(), if leader_open => leader_open = changed.is_ok(),
                () = state_changed => {}
                () = tokio::time::sleep(self.config.retry) => {}
            }
        }
    }

    /// Keeps one trusted connection: opens one when there is none, when the
    /// open one fails the trust of the moment, or when identity or trust
    /// changed (then the old one is kept until a new one succeeds).
    async fn upkeep(&self, live: &mut Option<Live>) {
        let revision = self.config.tls.revision.borrow().clone();
        let usable = live.as_ref().and_then(|open| {
            if open.reader.is_finished() {
                return None;
            }
            match (self.config.tls.recheck)(&open.connection.peer.get()) {
                Ok(()) => Some(open.revision == revision),
                Err(reason) => {
                    warn!(agent = %self.key, "dropping the connection: {reason}");
                    None
                }
            }
        });
        if usable == Some(true) {
            return;
        }
        if revision.is_empty() {
            // Dialling without an identity would only be refused.
            *live = None;
            self.update(|a| {
                a.lose_connection();
                a.last_error = Some(
                    "the controller has no valid tls material (its status says why under tls.last_error)"
                        .to_string(),
                );
            });
            return;
        }
        match self.open(revision).await {
            Ok(open) => {
                let reconnect = live.is_some();
                *live = Some(open);
                info!(agent = %self.key, "connected");
                self.update(|a| {
                    a.connected = true;
                    a.last_error = None;
                    if reconnect {
                        a.reconnects += 1;
                    }
                });
            }
            Err(error) if usable.is_some() => {
                // Make before break: the open connection is still trusted by both sides.
                debug!(agent = %self.key, "new connection refused, keeping the open one: {error}");
            }
            Err(error) => {
                *live = None;
                let error_text = error.to_string();
                // Logged once per distinct error, not on every retry.
                if self
                    .status
                    .borrow()
                    .agents
                    .get(&self.key)
                    .and_then(|a| a.last_error.as_ref())
                    != Some(&error_text)
                {
                    warn!(agent = %self.key, reason = error.metric_label(), "{error_text}");
                }
                self.update(|a| {
                    a.lose_connection();
                    a.last_error = Some(error_text);
                });
            }
        }
    }

    async fn open(&self, revision: String) -> Result<Live, LinkError> {
        let tls = &self.config.tls;
        let agent = || self.key.clone();
        let connection = transport::connect(
            self.target.addr,
            &tls.agent_name,
            Arc::clone(&tls.config),
            CONNECT_TIMEOUT,
        )
        .await
        .map_err(|source| LinkError::Unreachable {
            agent: agent(),
            source,
        })?;
        let mut client = AgentClient::new(connection.channel.clone())
            .max_decoding_message_size(hawser_proto::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(hawser_proto::MAX_MESSAGE_BYTES);
        let refused = |source| LinkError::Refused {
            agent: agent(),
            source,
        };
        let mut stream =
            tokio::time::timeout(CONNECT_TIMEOUT, client.watch_state(v1::StateRequest {}))
                .await
                .map_err(|_| LinkError::Silent { agent: agent() })?
                .map_err(refused)?
                .into_inner();
        let first = tokio::time::timeout(CONNECT_TIMEOUT, stream.next())
            .await
            .map_err(|_| LinkError::NoState { agent: agent() })?
            .ok_or_else(|| LinkError::Closed { agent: agent() })?
            .map_err(refused)?;
        let (state_tx, state) = watch::channel(first);
        let key = self.key.clone();
        let span = tracing::info_span!("agent_state", agent = %key);
        let reader = tokio::spawn(
            async move {
                while let Some(next) = stream.next().await {
                    match next {
                        Ok(state) => {
                            state_tx.send_replace(state);
                        }
                        Err(e) => {
                            warn!(agent = %key, "state stream ended: {}", e.message());
                            return;
                        }
                    }
                }
            }
            .instrument(span),
        );
        Ok(Live {
            connection,
            client,
            revision,
            state,
            reader,
        })
    }

    /// Pushes when the agent does not hold its render; `false` when the
    /// connection must be dropped.
    async fn reconcile(&self, live: &mut Live) -> bool {
        let Some(snapshot) = self.snapshots.borrow().clone() else {
            return true;
        };
        let state = live.state.borrow_and_update().clone();
        let settings: BTreeMap<String, String> =
            state.render_settings.clone().into_iter().collect();
        self.renders.asked_by(&self.key, &settings);
        let building = std::time::Instant::now();
        let built = match self.renders.build(&snapshot, &settings) {
            Ok(built) => built,
            Err(error) => {
                warn!(
                    reason = error.metric_label(),
                    "cannot build the agent's render: {error}"
                );
                self.update(|a| a.last_error = Some(error.to_string()));
                return true;
            }
        };
        let build_time = building.elapsed();
        let held = built.held_by(&state);
        let leading = *self.config.leader.borrow();
        self.update(|a| {
            a.connected = true;
            a.target_generation = Some(built.generation);
            a.agent_desired_generation = state.desired_generation;
            if held {
                a.serving_generation = Some(built.generation);
            } else if a.agent_applied_generation != state.applied_generation {
                // It applied something that is not this render (or started over).
                a.serving_generation = None;
            }
            a.agent_applied_generation = state.applied_generation;
            a.converged = held && state.applied_generation == state.desired_generation;
            a.last_outcome = state
                .last_result
                .as_ref()
                .map(|r| r.outcome().label().to_string());
            if held {
                a.last_error = (!state.last_error.is_empty()).then(|| state.last_error.clone());
            }
            if let Some(epoch) = leading
                && state.epoch > epoch
            {
                a.last_error = Some(format!(
                    "the agent follows leader epoch {} (ours is {epoch}): another controller leads",
                    state.epoch
                ));
            }
        });
        // Not the leader: keep the connection and the state warm, push nothing.
        let Some(epoch) = leading else {
            return true;
        };
        if held || state.epoch > epoch {
            return true;
        }
        if let Err(reason) = (self.config.tls.recheck)(&live.connection.peer.get()) {
            warn!(agent = %self.key, "not pushing: {reason}");
            return false;
        }
        let started = std::time::Instant::now();
        match push(
            &mut live.client,
            &state,
            &built,
            epoch,
            &self.config.controller,
        )
        .await
        {
            Ok((response, sent)) => {
                self.record(&response, sent, build_time, started.elapsed());
                true
            }
            Err(status) => {
                let error = format!("push to agent {} failed: {}", self.key, status.message());
                warn!("{error}");
                self.update(|a| {
                    a.failed_pushes += 1;
                    a.last_error = Some(error.clone());
                });
                status.code() != tonic::Code::Unauthenticated
                    && status.code() != tonic::Code::Unavailable
            }
        }
    }

    /// Notes a push's outcome; `build`: the time the agent's render took to
    /// be made ready for the wire (digests, the plan encoded), `took`: the
    /// push itself, the agent's apply included.
    fn record(
        &self,
        response: &v1::ApplyResponse,
        sent: Sent,
        build: std::time::Duration,
        took: std::time::Duration,
    ) {
        let result = response.result.clone().unwrap_or_default();
        let outcome = result.outcome();
        info!(
            agent = %self.key,
            generation = result.generation,
            files = sent.files,
            bytes = sent.bytes,
            build_ms = build.as_millis() as u64,
            push_ms = took.as_millis() as u64,
            "pushed: {}",
            outcome.label()
        );
        self.update(|a| {
            a.pushes += 1;
            a.last_push_files = sent.files;
            a.last_push_bytes = sent.bytes;
            a.last_push_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
            a.bytes_sent += sent.bytes;
            a.last_outcome = Some(outcome.label().to_string());
            a.last_error = match outcome {
                v1::Outcome::Runtime
                | v1::Outcome::Reload
                | v1::Outcome::NoOp
                | v1::Outcome::Scheduled => None,
                _ => Some(result.message.clone()),
            };
        });
    }

    /// Changes this agent's status; a link stopped because its agent left
    /// the fleet finds no entry and changes nothing.
    fn update(&self, change: impl FnOnce(&mut AgentLinkStatus)) {
        self.status
            .send_if_modified(|s| match s.agents.get_mut(&self.key) {
                Some(agent) => {
                    change(agent);
                    true
                }
                None => false,
            });
    }
}
