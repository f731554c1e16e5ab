//! Wall-clock steps of a day under running processes (split mode, fixture
//! `split_mode/`): a controller and two agents over mutual TLS, clients
//! sending requests to both agents, and libfaketime stepping the wall clock
//! of one agent (and of the HAProxy it spawns), then of the controller, a day
//! forward and a day back. The identities are fresh: issued when the test
//! starts, so a clock a day behind is before the moment they were issued.
//!
//! Oracle, after each step: the stepped process logs with the stepped time
//! (libfaketime really moved its clock, so the test cannot pass on a clock
//! that did not move); a route change reaches both agents at runtime and a
//! Service's new server timeout by a reload; each agent applies each new
//! generation at most once and reloads exactly once (its `/metrics`). Over
//! the whole run: no request fails; no failed reload, failed stage, rollback, drift
//! repair or HAProxy restart on either agent; the controller never fails a
//! push nor reconnects to an agent; no side refuses a certificate, its own
//! or its peer's (`tls.last_error` stays empty, nothing is logged refused).

use crate::support;

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use support::{
    AgentProc, Backends, ControllerProc, FakeClock, FleetLoad, LoadTarget, Manifests, Pki, Vars,
    log_line_time, pod,
};

const HOST: &str = "split.example.com";
const DAY: i64 = 86_400;

/// Agent counters that a clock step must never move.
const NEVER: [&str; 5] = [
    "hawser_failed_reloads_total",
    "hawser_failed_stages_total",
    "hawser_rollbacks_total",
    "hawser_drift_repairs_total",
    "hawser_haproxy_restarts_total",
];

/// What the processes log when a certificate is turned away.
const REFUSALS: [&str; 3] = [
    "tls directory refused",
    "control call refused",
    "refused the connection",
];

#[derive(Debug, Clone, Copy)]
enum Side {
    Agent,
    Controller,
}

struct Scene {
    _pki: Pki,
    _backends: Backends,
    _manifests: Manifests,
    /// The first on `agent_clock`, the second on the real clock.
    agents: [AgentProc; 2],
    controller: ControllerProc,
    agent_clock: FakeClock,
    controller_clock: FakeClock,
    /// The fixture's `web.yaml` as it started.
    web: String,
}

async fn scene() -> Scene {
    let backends = Backends::start(&[pod("split", "web", "web-a"), pod("split", "web", "web-b")]);
    let mut vars = Vars::new();
    vars.extend(backends.vars());
    let manifests = Manifests::from_fixture("split_mode", &vars);
    let pki = Pki::bootstrap();
    let (agent_clock, controller_clock) = (FakeClock::new(), FakeClock::new());
    // Drift checks every second, so a clock-driven repair would show.
    let args = ["--drift-interval-secs", "1"];
    let agents = [
        AgentProc::start_observed(&pki.agent_dir(), &args, agent_clock.env()),
        AgentProc::start_observed(&pki.agent_dir(), &args, Vec::new()),
    ];
    let env = controller_clock.env();
    let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let controller = ControllerProc::start_with_env(
        manifests.path(),
        &[&agents[0], &agents[1]],
        &pki.controller_dir(),
        &env,
    );
    controller.wait_converged().await;
    for agent in &agents {
        agent.expect_status_eventually(HOST, "/app/x", 200).await;
    }
    let web = controller.read_manifest("web.yaml");
    Scene {
        web,
        _pki: pki,
        _backends: backends,
        _manifests: manifests,
        agents,
        controller,
        agent_clock,
        controller_clock,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_forward_and_back_on_either_side_breaks_nothing() {
    let mut scene = scene().await;
    let addrs: Vec<SocketAddr> = scene.agents.iter().map(|a| a.http).collect();
    let target = LoadTarget {
        path: "/app/x".into(),
        ..LoadTarget::new(HOST, &["web-a", "web-b"])
    };
    let load = FleetLoad::start(&addrs, &target);

    let steps = [
        (Side::Agent, DAY),
        (Side::Agent, -DAY),
        (Side::Controller, DAY),
        (Side::Controller, -DAY),
    ];
    for (round, (side, offset)) in steps.into_iter().enumerate() {
        step(&mut scene, round, side, offset).await;
    }

    load.expect_no_failure("clock steps of a day").await;
    expect_nothing_refused(&scene).await;
}

/// Steps `side`'s clock to `offset` seconds from the real time, then makes a
/// runtime change and a reload change and checks both arrive, once each.
async fn step(scene: &mut Scene, round: usize, side: Side, offset: i64) {
    let during = format!("the {side:?}'s clock stepped to {offset:+} s");
    let clock = match side {
        Side::Agent => &mut scene.agent_clock,
        Side::Controller => &mut scene.controller_clock,
    };
    clock.step_to(offset);
    let stepped_now = clock.now();
    let stepped_output = || match side {
        Side::Agent => scene.agents[0].output(),
        Side::Controller => scene.controller.output(),
    };
    let mark = stepped_output().len();
    let controller = &scene.controller;
    let before = generation(&controller.status().await);
    let mut counted = Vec::new();
    for agent in &scene.agents {
        counted.push(counts(agent).await);
    }

    // A route: a map change, applied at runtime.
    controller.write_manifest("route.yaml", &route(round));
    for agent in &scene.agents {
        agent
            .expect_status_eventually(HOST, &format!("/step{round}/x"), 200)
            .await;
    }
    let status = controller.wait_converged().await;
    for agent in &scene.agents {
        let outcome = &ControllerProc::agent(&status, agent)["last_outcome"];
        assert_eq!(outcome, "runtime", "{during}: {status:#}");
    }
    let routed = generation(&status);
    // A Service's server timeout: a reload, under the load on that Service.
    controller.write_manifest("web.yaml", &with_timeout(&scene.web, round));
    controller
        .wait_for_status("the timeout's render", |s| {
            s["controller"]["generation"].as_u64() > Some(routed)
        })
        .await;
    let status = controller.wait_converged().await;
    let generations = (generation(&status) - before) as f64;

    expect_logged_at(&stepped_output()[mark..], stepped_now, &during);
    for (agent, (applies, reloads)) in scene.agents.iter().zip(counted) {
        // The counters follow the agent's outcomes a moment later.
        let deadline = Instant::now() + support::TIMEOUT;
        let (applies_now, reloads_now) = loop {
            let (applies_now, reloads_now) = counts(agent).await;
            if reloads_now > reloads || Instant::now() > deadline {
                break (applies_now, reloads_now);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(
            (1.0..=generations).contains(&(applies_now - applies)),
            "{during}: {} applies for {generations} generations\n{}",
            applies_now - applies,
            agent.output()
        );
        assert_eq!(
            reloads_now - reloads,
            1.0,
            "{during}: one reload for one new server timeout\n{}",
            agent.output()
        );
    }
}

/// `(applies, reloads)` on the agent's `/metrics`.
async fn counts(agent: &AgentProc) -> (f64, f64) {
    (
        agent.metric_sum("hawser_applies_total").await,
        agent.metric_sum("hawser_reloads_total").await,
    )
}

fn generation(status: &serde_json::Value) -> u64 {
    status["controller"]["generation"]
        .as_u64()
        .unwrap_or_else(|| panic!("no generation in {status:#}"))
}

/// The last line logged since the step carries the stepped time (within
/// ten minutes of it, a day away from the real time).
fn expect_logged_at(tail: &str, stepped_now: SystemTime, during: &str) {
    let logged = tail
        .lines()
        .filter_map(log_line_time)
        .next_back()
        .unwrap_or_else(|| panic!("{during}: nothing logged since the step:\n{tail}"));
    let apart = logged
        .duration_since(stepped_now)
        .unwrap_or_else(|e| e.duration());
    assert!(
        apart < Duration::from_secs(600),
        "{during}: the process logged at {logged:?}, {apart:?} from its stepped clock \
         ({stepped_now:?}); libfaketime did not move its clock:\n{tail}"
    );
}

/// Over the whole run: nothing refused, nothing failed, no reconnect.
async fn expect_nothing_refused(scene: &Scene) {
    let controller = &scene.controller;
    let status = controller.status().await;
    assert!(status["tls"]["last_error"].is_null(), "{status:#}");
    assert_eq!(
        controller.metric("hawser_failed_pushes_total").await,
        Some(0.0),
        "{status:#}"
    );
    for agent in &scene.agents {
        let seen = ControllerProc::agent(&status, agent);
        assert_eq!(seen["connected"], true, "{status:#}");
        assert_eq!(seen["reconnects"], 0, "{status:#}");
        assert_eq!(seen["failed_pushes"], 0, "{status:#}");
        let state = agent.state();
        assert!(state["tls"]["last_error"].is_null(), "{state:#}");
        for counter in NEVER {
            assert_eq!(agent.metric_sum(counter).await, 0.0, "{counter}");
        }
    }
    let outputs = [
        scene.agents[0].output(),
        scene.agents[1].output(),
        controller.output(),
    ];
    for (output, refusal) in outputs.iter().flat_map(|o| REFUSALS.map(|r| (o, r))) {
        assert!(!output.contains(refusal), "logged {refusal:?}:\n{output}");
    }
}

/// An Ingress of one path, `/step<round>`, on the fixture's Service: a map
/// change from the last round's.
fn route(round: usize) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\n\
         metadata: {{ name: step, namespace: split }}\n\
         spec:\n  ingressClassName: hawser\n  rules:\n    - host: {HOST}\n      http:\n        paths:\n\
         \x20         - {{ path: /step{round}, pathType: Prefix, backend: {{ service: {{ name: web, port: {{ name: http }} }} }} }}\n"
    )
}

/// The fixture's `web.yaml` with its Service's server timeout set to a
/// value of this round: a change to its backend, which HAProxy takes only
/// by a reload.
fn with_timeout(web: &str, round: usize) -> String {
    let service = "metadata: { name: web, namespace: split }";
    assert!(web.contains(service), "{web}");
    // The Service is the first object of the file.
    web.replacen(
        service,
        &format!(
            "metadata: {{ name: web, namespace: split, \
             annotations: {{ hawser.dev/timeout-server: \"{}s\" }} }}",
            31 + round
        ),
        1,
    )
}
