//! Stopping under load (fixture `stop_under_load/`): HAProxy stops softly,
//! finishes the requests in flight, refuses new connections, and whoever
//! stops it returns only after it is gone.
//!
//! Two paths: `hawser run` (spawn mode) on SIGTERM, and the chart's pod,
//! where HAProxy runs in its own container (master-worker, master socket,
//! `-C current`) beside an attached agent and `hawser haproxy-stop` is its
//! preStop hook.
//!
//! Oracle: HAProxy's management guide: SIGUSR1 is the soft stop (listeners
//! close, connections in flight finish), SIGTERM the hard stop (every
//! connection closed at once), and the master leaves after its workers.
//! Requests are slow (the echo backend holds each answer, `x-echo-delay-ms`)
//! and each is proven to have reached its backend before the stop begins, so
//! each is in flight when the signal arrives.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::support::{
    AgentProc, Backends, ChildGuard, ControllerProc, Load, LoadReport, LoadTarget, Manifests, Pki,
    Run, RunOptions, SlowRequests, TIMEOUT, Vars, expect_refused_eventually, haproxy_masters,
    hawser_command, pod, signal,
};

const HOST: &str = "stop.example.com";
const PODS: [&str; 2] = ["web-a", "web-b"];

fn backends() -> Backends {
    Backends::start(&[pod("stop", "web", "web-a"), pod("stop", "web", "web-b")])
}

fn manifests(backends: &Backends) -> Manifests {
    let mut vars = Vars::new();
    vars.extend(backends.vars());
    Manifests::from_fixture("stop_under_load", &vars)
}

/// Every slow request was answered 200 by one of the Service's pods.
fn expect_all_answered(outcomes: &[Result<crate::support::Response, String>], context: &str) {
    for (i, outcome) in outcomes.iter().enumerate() {
        match outcome {
            Ok(response) if response.status == 200 => {
                let reply = response.echo();
                assert!(PODS.contains(&reply.pod.as_str()), "{context}: {reply:?}");
            }
            Ok(response) => panic!(
                "{context}: slow request {i} answered {}: {}",
                response.status,
                response.text()
            ),
            Err(e) => panic!("{context}: slow request {i} failed: {e}"),
        }
    }
}

fn expect_no_failure(report: &LoadReport, context: &str) {
    assert!(report.requests > 0, "{context}: no load was sent");
    assert_eq!(report.failures, 0, "{context}: {report}");
}

/// Whether `pid` is a running process (present and not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            rest.split_whitespace().next().map(|s| s != "Z" && s != "X")
        })
        .unwrap_or(false)
}

/// Oracle: SIGTERM to `hawser run` soft-stops its HAProxy. Ten slow
/// requests (4 s each) that reached their backends before the signal are
/// all answered 200 by a pod of the Service; while they are still in flight
/// a new connection is refused (the listeners closed at the soft stop, not
/// at the end); the load before the signal had no failure; and when hawser
/// has exited, its master and every worker it had are gone, with no
/// "killing it" in its log (the drain ended on its own, within
/// `--stop-grace-secs`, not by SIGKILL). Without the soft stop the slow
/// requests are cut; without waiting for HAProxy, hawser exits while its
/// workers still hold them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_hawser_run_finishes_requests_in_flight_then_exits_after_haproxy() {
    let backends = backends();
    let manifests = manifests(&backends);
    let mut run = Run::start_with(
        manifests.path(),
        RunOptions {
            args: vec!["--stop-grace-secs".into(), "60".into()],
            ..RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;
    run.expect_route_eventually(HOST, "/app/x", "web").await;

    let load = Load::start(run.http, 4, vec![load_target()]);
    let slow = SlowRequests::start(run.http, HOST, "/app", 10, Duration::from_secs(4));
    slow.expect_reached(&backends).await;
    expect_no_failure(&load.stop().await, "load before the stop");

    let master = run.haproxy_master_pid().expect("haproxy's pid file");
    let workers = run.worker_pids().await;
    assert!(!workers.is_empty(), "no worker in show proc");
    signal("TERM", run.pid().expect("hawser runs"));

    expect_refused_eventually(run.http, || run.output()).await;
    assert!(
        slow.finished() < 10,
        "the slow requests ended before the listeners closed: cut by a hard stop, or inconclusive"
    );
    let status = run
        .wait_exited(Duration::from_secs(60) + TIMEOUT)
        .await
        .unwrap_or_else(|| panic!("hawser run did not exit\n{}", run.output()));
    let left: Vec<u32> = std::iter::once(master)
        .chain(workers.iter().copied())
        .filter(|pid| running(*pid))
        .collect();
    assert!(
        left.is_empty(),
        "haproxy processes {left:?} outlived hawser\n{}",
        run.output()
    );
    assert!(haproxy_masters(&run.state_dir()).is_empty());
    assert!(
        status.success(),
        "hawser run exited {status}\n{}",
        run.output()
    );
    assert!(
        !run.output().contains("killing it"),
        "haproxy was killed, not drained\n{}",
        run.output()
    );
    expect_all_answered(&slow.finish().await, "slow requests across SIGTERM");
}

/// Oracle: `hawser agent --spawn-haproxy`, pushed to and watched by a
/// controller (whose state stream never ends on its own), soft-stops its
/// HAProxy on SIGTERM: slow requests (4 s) in flight at the signal are all
/// answered 200, new connections are then refused, the agent exits 0 while
/// the controller still runs, and by then HAProxy's master and workers are
/// gone. Without a bound on the control server's graceful shutdown the
/// agent waits for the controller's stream and never gets to stop HAProxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_a_spawning_agent_watched_by_a_controller_drains_then_exits() {
    let backends = backends();
    let manifests = manifests(&backends);
    let pki = Pki::bootstrap();
    let mut agent = AgentProc::start_with(&pki.agent_dir(), &["--stop-grace-secs", "60"]);
    let controller = ControllerProc::start(manifests.path(), &[&agent], &pki.controller_dir(), &[]);
    controller.wait_converged().await;
    agent.expect_status_eventually(HOST, "/app/x", 200).await;

    let slow = SlowRequests::start(agent.http, HOST, "/app", 10, Duration::from_secs(4));
    slow.expect_reached(&backends).await;
    let masters = haproxy_masters(&agent.state_dir());
    assert_eq!(masters.len(), 1, "one haproxy master: {masters:?}");
    signal("TERM", agent.pid().expect("the agent runs"));

    expect_refused_eventually(agent.http, || agent.output()).await;
    let status = agent
        .wait_exited(Duration::from_secs(60) + TIMEOUT)
        .await
        .unwrap_or_else(|| panic!("the agent did not exit\n{}", agent.output()));
    assert!(
        status.success(),
        "the agent exited {status}\n{}",
        agent.output()
    );
    assert!(!running(masters[0]), "haproxy's master outlived the agent");
    assert!(
        !agent.output().contains("killing it"),
        "haproxy was killed, not drained\n{}",
        agent.output()
    );
    assert!(haproxy_masters(&agent.state_dir()).is_empty());
    expect_all_answered(
        &slow.finish().await,
        "slow requests across the agent's SIGTERM",
    );
    drop(controller);
}

fn load_target() -> LoadTarget {
    let mut target = LoadTarget::new(HOST, &PODS);
    target.path = "/app/load".to_string();
    target
}

/// The chart's pod: HAProxy started as its container starts it, an attached
/// agent, and a controller that pushed the fixture.
struct Pod {
    backends: Backends,
    agent: AgentProc,
    _controller: ControllerProc,
    _pki: Pki,
    _manifests: Manifests,
}

impl Pod {
    async fn start() -> Pod {
        let backends = backends();
        let manifests = manifests(&backends);
        let pki = Pki::bootstrap();
        let mut agent = AgentProc::attach(&pki.agent_dir());
        agent.wait_alive().await;
        agent.start_haproxy();
        let controller =
            ControllerProc::start(manifests.path(), &[&agent], &pki.controller_dir(), &[]);
        controller.wait_converged().await;
        agent.expect_status_eventually(HOST, "/app/x", 200).await;
        Pod {
            backends,
            agent,
            _controller: controller,
            _pki: pki,
            _manifests: manifests,
        }
    }

    fn http(&self) -> SocketAddr {
        self.agent.http
    }

    /// `hawser haproxy-stop` as the chart's preStop hook runs it.
    fn run_hook(&self, wait_before: u64, drain: u64) -> ChildGuard {
        let mut command = hawser_command(["haproxy-stop"]);
        command
            .arg("--master-socket")
            .arg(self.agent.master_socket())
            .args(["--wait-before", &wait_before.to_string()])
            .args(["--drain", &drain.to_string()])
            .env("HAWSER_LOG", "info");
        ChildGuard::spawn("hawser haproxy-stop", &mut command)
    }
}

/// What the hook logs when it sends SIGUSR1.
const SOFT_STOP_LOGGED: &str = "asking the haproxy master to stop softly";

async fn wait_logged(hook: &ChildGuard, text: &str) {
    let deadline = Instant::now() + TIMEOUT;
    while !hook.output().contains(text) {
        assert!(
            Instant::now() < deadline,
            "the hook never logged {text:?}\n{}",
            hook.output()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_exit(hook: &mut ChildGuard, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = hook.exited() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the hook did not return\n{}",
            hook.output()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Oracle: during the hook's `--wait-before` HAProxy serves new connections
/// as before (load with no failure, all of it sent before the hook's soft
/// stop); then, with slow requests (8 s) in flight, new connections are
/// refused, every slow request is answered 200, HAProxy's master exits, the
/// hook exits 0, and the attached agent is still running (the chart's
/// native sidecar outlives HAProxy). Without the hook the kubelet's SIGTERM
/// is HAProxy's hard stop and the slow requests are cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prestop_hook_serves_through_its_wait_then_drains_in_flight_requests() {
    let mut pod = Pod::start().await;
    let slow = SlowRequests::start(pod.http(), HOST, "/app", 10, Duration::from_secs(8));
    slow.expect_reached(&pod.backends).await;
    let mut hook = pod.run_hook(5, 30);

    let load = Load::start(pod.http(), 4, vec![load_target()]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let report = load.stop().await;
    assert!(
        !hook.output().contains(SOFT_STOP_LOGGED),
        "inconclusive: the load outlasted the hook's wait\n{}",
        hook.output()
    );
    expect_no_failure(&report, "load during the hook's wait");

    wait_logged(&hook, SOFT_STOP_LOGGED).await;
    expect_refused_eventually(pod.http(), || hook.output()).await;
    assert!(
        slow.finished() < 10,
        "the slow requests ended before the listeners closed: cut by a hard stop, or inconclusive"
    );
    expect_all_answered(&slow.finish().await, "slow requests across the hook");
    let status = wait_exit(&mut hook, Duration::from_secs(30) + TIMEOUT).await;
    assert!(status.success(), "hook exited {status}\n{}", hook.output());
    let haproxy = pod
        .agent
        .wait_haproxy_exited(TIMEOUT)
        .await
        .expect("haproxy's master is gone once the hook returned");
    assert!(haproxy.success(), "haproxy exited {haproxy}");
    assert!(pod.agent.agent_running(), "the agent outlives HAProxy");
}

/// Oracle: a request that outlasts `--drain 2` (its backend holds it 60 s)
/// is cut when the drain runs out: the hook sends SIGTERM, returns 3 long
/// before the request would have ended (within the suite's timeout, a third
/// of its 60 s), the request ends without an answer (closed, not timed out
/// by the client), and HAProxy's master is gone. Without the deadline the
/// hook would wait out the request, past the pod's grace period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prestop_hook_hard_stops_a_request_that_outlasts_the_drain() {
    let mut pod = Pod::start().await;
    let long = SlowRequests::start(pod.http(), HOST, "/app", 1, Duration::from_secs(60));
    long.expect_reached(&pod.backends).await;
    let mut hook = pod.run_hook(0, 2);

    let status = wait_exit(&mut hook, TIMEOUT).await;
    assert_eq!(status.code(), Some(3), "{}", hook.output());
    assert!(hook.output().contains("hard-stopped"), "{}", hook.output());
    let outcome = tokio::time::timeout(TIMEOUT, long.finish())
        .await
        .expect("the long request ends with HAProxy");
    match &outcome[0] {
        Ok(response) => panic!("the long request was answered {}", response.status),
        Err(e) => assert!(!e.contains("no answer within"), "not closed: {e}"),
    }
    pod.agent
        .wait_haproxy_exited(TIMEOUT)
        .await
        .expect("haproxy's master is gone");
}
