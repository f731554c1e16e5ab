//! Split mode without its controller (fixture `split_mode/`): the controller
//! killed, or cut off from its agents by a partition (connections cut and
//! refused, then a slow link), while clients send requests to every agent.
//!
//! Oracle: no request fails at any time; each agent stays healthy and
//! serving the last generation it got; when the controller is back (a new
//! process, or the link healed) each agent converges on the newest render
//! with at most one apply and no reload, a change made meanwhile included.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use support::proxy::{Link, Proxy};
use support::{
    AgentProc, Backends, ControllerProc, FleetLoad, LoadTarget, Manifests, Pki, Vars, pod,
};

const HOST: &str = "split.example.com";

struct Scene {
    pki: Pki,
    _backends: Backends,
    manifests: Manifests,
    agents: Vec<AgentProc>,
}

fn scene() -> Scene {
    let backends = Backends::start(&[pod("split", "web", "web-a"), pod("split", "web", "web-b")]);
    let mut vars = Vars::new();
    vars.extend(backends.vars());
    let manifests = Manifests::from_fixture("split_mode", &vars);
    let pki = Pki::bootstrap();
    let agents = (0..2).map(|_| AgentProc::start(&pki.agent_dir())).collect();
    Scene {
        pki,
        _backends: backends,
        manifests,
        agents,
    }
}

impl Scene {
    /// A controller pushing to `addresses` (the agents', or proxies in
    /// front of them), once every agent holds its render.
    async fn controller_at(&self, addresses: &[SocketAddr]) -> ControllerProc {
        let controller = ControllerProc::start_at(
            self.manifests.path(),
            addresses,
            &self.pki.controller_dir(),
            &[],
        );
        controller.wait_converged().await;
        controller
    }

    fn addresses(&self) -> Vec<SocketAddr> {
        self.agents.iter().map(|a| a.listen).collect()
    }
}

/// Load on every agent's HAProxy at once, on `path`.
fn fleet_load(agents: &[AgentProc], path: &str) -> FleetLoad {
    let target = LoadTarget {
        path: path.to_string(),
        ..LoadTarget::new(HOST, &["web-a", "web-b"])
    };
    let addrs: Vec<SocketAddr> = agents.iter().map(|agent| agent.http).collect();
    FleetLoad::start(&addrs, &target)
}

/// How many versions each agent has applied (its `applied:` log lines).
fn applies(agents: &[AgentProc]) -> Vec<usize> {
    agents
        .iter()
        .map(|a| a.output().matches("hawser_agent::agent: applied:").count())
        .collect()
}

fn reloads(agents: &[AgentProc]) -> Vec<usize> {
    agents
        .iter()
        .map(|a| a.output().matches("reload verified").count())
        .collect()
}

fn expect_serving(agents: &[AgentProc], during: &str) {
    for agent in agents {
        agent.expect_alive();
        let state = agent.state();
        assert_eq!(state["status"]["phase"], "serving", "{during}: {state:#}");
    }
}

/// Waits until every agent answers `path` with 200.
async fn expect_served(agents: &[AgentProc], path: &str) {
    for agent in agents {
        agent.expect_status_eventually(HOST, path, 200).await;
    }
}

/// After the controller is back: at most one more apply each, no reload.
fn expect_quiet_resync(agents: &[AgentProc], applied: &[usize], reloaded: &[usize]) {
    for ((now, before), agent) in applies(agents).iter().zip(applied).zip(agents) {
        assert!(
            *now <= before + 1,
            "{} applies on return (at most one)\n{}",
            now - before,
            agent.output()
        );
    }
    assert_eq!(reloads(agents), reloaded, "no reload on return");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_serve_on_while_the_controller_is_killed_and_resync_quietly() {
    let scene = scene();
    let controller = scene.controller_at(&scene.addresses()).await;
    expect_served(&scene.agents, "/app/x").await;
    let load = fleet_load(&scene.agents, "/app/x");

    drop(controller); // kill -9
    tokio::time::sleep(Duration::from_secs(3)).await;
    expect_serving(&scene.agents, "with the controller gone");
    let (applied, reloaded) = (applies(&scene.agents), reloads(&scene.agents));

    // A new controller process renders the same manifests again.
    let _controller = scene.controller_at(&scene.addresses()).await;
    load.expect_no_failure("the controller killed and back")
        .await;
    expect_quiet_resync(&scene.agents, &applied, &reloaded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_serve_on_through_a_partition_and_take_what_changed_once_it_heals() {
    let scene = scene();
    let mut proxies = Vec::new();
    for agent in &scene.agents {
        proxies.push(Proxy::start(agent.listen).await);
    }
    let addresses: Vec<_> = proxies.iter().map(|p| p.addr).collect();
    let controller = scene.controller_at(&addresses).await;
    expect_served(&scene.agents, "/app/x").await;
    let load = fleet_load(&scene.agents, "/app/x");

    // Cut off: open connections cut, new ones refused; a change is made.
    for proxy in &proxies {
        proxy.set(Link::Refuse);
    }
    let web = controller.read_manifest("web.yaml");
    controller.write_manifest("web.yaml", &format!("{web}{}", second_path(&web)));
    tokio::time::sleep(Duration::from_secs(3)).await;
    expect_serving(&scene.agents, "partitioned");
    // The controller does not count them converged: it cannot know.
    let status = controller.status().await;
    for proxy in &proxies {
        let seen = &status["fleet"]["agents"][proxy.addr.to_string()];
        assert_eq!(
            (&seen["connected"], &seen["converged"]),
            (&false.into(), &false.into()),
            "{status:#}"
        );
    }
    assert_eq!(
        controller.metric("hawser_agents_converged").await,
        Some(0.0)
    );
    let (applied, reloaded) = (applies(&scene.agents), reloads(&scene.agents));

    // A slow link, then a healed one: the change arrives, once.
    for proxy in &proxies {
        proxy.set(Link::Slow(Duration::from_millis(200)));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for proxy in &proxies {
        proxy.set(Link::Pass);
    }
    controller.wait_converged().await;
    expect_served(&scene.agents, "/second/x").await;
    load.expect_no_failure("a partition and a slow link").await;
    expect_quiet_resync(&scene.agents, &applied, &reloaded);
}

/// One more path of the fixture's Ingress, as YAML appended to its rules.
fn second_path(web: &str) -> String {
    assert!(web.contains("- path: /app"), "{web}");
    "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\n\
     metadata: { name: second, namespace: split }\n\
     spec:\n  ingressClassName: hawser\n  rules:\n    - host: split.example.com\n      http:\n        paths:\n\
     \x20         - { path: /second, pathType: Prefix, backend: { service: { name: web, port: { name: http } } } }\n"
        .to_string()
}
