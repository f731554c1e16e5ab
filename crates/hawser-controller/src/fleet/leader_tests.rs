//! Leadership: only a fleet that leads pushes, with its epoch; losing the
//! lead stops pushing at once. What an agent serves, as the Gateway status
//! reads it. Against a stub agent over real mutual TLS.

use hawser_plan::Generation;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hawser_pki::tls::{SharedMaterial, client_config, load_dir, server_config};
use hawser_pki::{Role, issue};
use hawser_proto::v1;
use hawser_render::{RenderConfig, generate_default_certificate};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::WatchStream;

use super::*;

const PATIENCE: Duration = Duration::from_secs(20);

/// An agent that records every Apply's epoch and answers no-op; it holds
/// nothing, unless `applies` is set: then it serves what it is sent.
#[derive(Clone, Default)]
struct StubAgent {
    epochs: Arc<Mutex<Vec<(String, u64)>>>,
    state: Arc<Mutex<Option<watch::Sender<v1::State>>>>,
    applies: Arc<AtomicBool>,
}

#[tonic::async_trait]
impl v1::agent_server::Agent for StubAgent {
    async fn get_state(
        &self,
        _: tonic::Request<v1::StateRequest>,
    ) -> Result<tonic::Response<v1::State>, tonic::Status> {
        Ok(tonic::Response::new(v1::State::default()))
    }

    type WatchStateStream = std::pin::Pin<
        Box<dyn tokio_stream::Stream<Item = Result<v1::State, tonic::Status>> + Send>,
    >;

    async fn watch_state(
        &self,
        _: tonic::Request<v1::StateRequest>,
    ) -> Result<tonic::Response<Self::WatchStateStream>, tonic::Status> {
        let (tx, rx) = watch::channel(v1::State::default());
        *self.state.lock().unwrap() = Some(tx);
        Ok(tonic::Response::new(Box::pin(WatchStream::new(rx).map(Ok))))
    }

    async fn apply(
        &self,
        request: tonic::Request<v1::ApplyRequest>,
    ) -> Result<tonic::Response<v1::ApplyResponse>, tonic::Status> {
        let request = request.into_inner();
        self.epochs
            .lock()
            .unwrap()
            .push((request.controller.clone(), request.epoch));
        // A fresh state each time, so the leader keeps looking (and pushing).
        let applies = self.applies.load(Ordering::SeqCst);
        if let Some(state) = self.state.lock().unwrap().as_ref() {
            state.send_modify(|s| {
                s.phase = format!("after {}", request.generation);
                if applies {
                    s.desired_generation = request.generation;
                    s.applied_generation = request.generation;
                    s.files = request
                        .files
                        .iter()
                        .map(|f| (f.path.clone(), f.digest.clone()))
                        .collect();
                    s.plan_digest = request.plan_digest.clone();
                }
            });
        }
        Ok(tonic::Response::new(v1::ApplyResponse {
            result: Some(v1::ApplyResult {
                generation: request.generation,
                outcome: v1::Outcome::NoOp.into(),
                message: String::new(),
                duration_ms: 0,
            }),
            missing_digests: Vec::new(),
            state: None,
        }))
    }
}

fn write_identity(dir: &std::path::Path, ca: &issue::CertifiedKey, role: Role, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let identity = issue::new_identity(ca, role, name, SystemTime::now(), 30).unwrap();
    std::fs::write(dir.join("tls.crt"), identity.cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), identity.key_pem).unwrap();
    std::fs::write(dir.join("ca.crt"), &ca.cert_pem).unwrap();
}

fn material(dir: &std::path::Path, role: Role) -> SharedMaterial {
    SharedMaterial::with(load_dir(dir, role, SystemTime::now()).unwrap())
}

fn controller(
    name: &str,
    agent: std::net::SocketAddr,
    tls: &SharedMaterial,
    leader: watch::Receiver<Option<u64>>,
) -> Fleet {
    let (_revision_tx, revision) = watch::channel("pki".to_string());
    std::mem::forget(_revision_tx);
    Fleet::start(FleetConfig {
        agents: vec![AgentTarget { addr: agent }],
        tls: ClientTls {
            config: client_config(tls.clone(), "hawser-agent".into()),
            agent_name: "hawser-agent".into(),
            revision,
            recheck: Arc::new(|_| Ok(())),
        },
        render: RenderConfig::default(),
        default_certificate: generate_default_certificate().unwrap(),
        leader,
        controller: name.into(),
        retry: Duration::from_millis(50),
    })
    .unwrap()
}

fn pushes_by(stub: &StubAgent, name: &str) -> Vec<u64> {
    stub.epochs
        .lock()
        .unwrap()
        .iter()
        .filter(|(who, _)| who == name)
        .map(|(_, epoch)| *epoch)
        .collect()
}

async fn until(what: &str, check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A stub agent served over mutual TLS, and the controller's TLS material.
async fn serve_stub(pki: &std::path::Path) -> (StubAgent, std::net::SocketAddr, SharedMaterial) {
    let ca = issue::new_ca(SystemTime::now(), 30, 1).unwrap();
    write_identity(&pki.join("agent"), &ca, Role::Agent, "hawser-agent");
    write_identity(
        &pki.join("controller"),
        &ca,
        Role::Controller,
        "hawser-controller",
    );
    let agent_tls = material(&pki.join("agent"), Role::Agent);
    let controller_tls = material(&pki.join("controller"), Role::Controller);
    let stub = StubAgent::default();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = hawser_proto::transport::incoming(
        listener,
        server_config(agent_tls, "hawser-controller".into()),
    );
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(v1::agent_server::AgentServer::new(stub.clone()))
            .serve_with_incoming(incoming),
    );
    (stub, addr, controller_tls)
}

/// Generation `generation`: the render of an empty store under `config`.
fn render(generation: u64, config: RenderConfig) -> CycleRender {
    let store = Arc::new(hawser_model::Store::new());
    let rendered = hawser_render::Renderer::new(config)
        .unwrap()
        .render(&store)
        .unwrap();
    CycleRender {
        generation: Generation::new(generation),
        store,
        config: Arc::clone(&rendered.config),
        rendered: Arc::new(rendered),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_serves_a_generation_until_it_serves_a_newer_one() {
    let pki = tempfile::tempdir().unwrap();
    let (stub, addr, controller_tls) = serve_stub(pki.path()).await;
    stub.applies.store(true, Ordering::SeqCst);
    let (_leads, leader) = watch::channel(Some(1));
    let fleet = controller("a", addr, &controller_tls, leader);
    let sink = fleet.sink();
    let serving = |fleet: &Fleet| {
        let status = fleet.status().borrow().clone();
        status
            .agents
            .values()
            .next()
            .and_then(|a| a.serving_generation)
    };
    sink.deliver(&render(1, RenderConfig::default()));
    until("it serves generation 1", || serving(&fleet) == Some(1)).await;

    // Generation 2 is pushed but not applied: the agent serves 1 meanwhile.
    stub.applies.store(false, Ordering::SeqCst);
    let pushed = pushes_by(&stub, "a").len();
    let mut changed = RenderConfig::default();
    changed.settings.http_port = 8080;
    sink.deliver(&render(2, changed));
    until("generation 2 is pushed", || {
        pushes_by(&stub, "a").len() > pushed + 1
    })
    .await;
    assert_eq!(serving(&fleet), Some(1));

    stub.applies.store(true, Ordering::SeqCst);
    until("it serves generation 2", || serving(&fleet) == Some(2)).await;
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_pushes_and_losing_the_lead_stops_it() {
    let pki = tempfile::tempdir().unwrap();
    let (stub, addr, controller_tls) = serve_stub(pki.path()).await;

    let (a_leads, a_leader) = watch::channel(Some(2));
    let (b_leads, b_leader) = watch::channel(None);
    let a = controller("a", addr, &controller_tls, a_leader);
    let b = controller("b", addr, &controller_tls, b_leader);
    let sink_a = a.sink();
    let sink_b = b.sink();
    let first = render(1, RenderConfig::default());
    sink_a.deliver(&first);
    sink_b.deliver(&first);

    until("the leader pushes", || !pushes_by(&stub, "a").is_empty()).await;
    assert!(pushes_by(&stub, "a").iter().all(|&e| e == 2));
    until("the standby is connected", || {
        b.status().borrow().agents.values().all(|a| a.connected)
    })
    .await;
    assert!(pushes_by(&stub, "b").is_empty(), "a standby pushed");

    // Handover: a loses the lead, b takes it with a higher epoch.
    a_leads.send_replace(None);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let a_before = pushes_by(&stub, "a").len();
    b_leads.send_replace(Some(3));
    until("the new leader pushes", || {
        !pushes_by(&stub, "b").is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        pushes_by(&stub, "a").len(),
        a_before,
        "a pushed after losing the lead"
    );
    assert!(pushes_by(&stub, "b").iter().all(|&e| e == 3));
    assert_eq!(b.status().borrow().epoch, Some(3));
    assert_eq!(a.status().borrow().epoch, None);
    a.stop().await;
    b.stop().await;
}
