//! Continuous load: concurrent clients, each sending one HTTP/1.1 `GET` per
//! fresh connection in a loop, checking every answer, until stopped.
//!
//! ```text
//!  Load::start(addr, clients, targets) ──► N tokio tasks: GET target[i % len] ... until stop
//!                                                 │ status, echo pod, connection errors
//!  Load::stop() ◄── LoadReport (totals, by status, the first failures) ◄──┘
//! ```
//!
//! A failure is anything but a 200 from one of the pods the target expects:
//! a connection error or reset, a 5xx, a 404, a body that is not an echo
//! reply, or a pod of another Service.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hawser_echo::EchoReply;
use tokio::task::JoinHandle;

use super::http;

/// Failures kept word for word in a report; the rest are only counted.
const KEPT_FAILURES: usize = 20;

/// Each client's pause between two requests: the load stays continuous
/// (requests are in flight at every moment) but leaves a two-core machine
/// time for hawser, HAProxy and the tests running next to it.
const PAUSE: Duration = Duration::from_millis(2);

/// Where load goes: a host, and the pods allowed to answer for it.
#[derive(Debug, Clone)]
pub struct LoadTarget {
    pub host: String,
    pub path: String,
    /// Every pod that may answer while the test runs.
    pub pods: BTreeSet<String>,
}

impl LoadTarget {
    /// `GET /` on `host`, answered by one of `pods`.
    pub fn new(host: &str, pods: &[&str]) -> LoadTarget {
        LoadTarget {
            host: host.to_string(),
            path: "/".to_string(),
            pods: pods.iter().map(|p| p.to_string()).collect(),
        }
    }
}

/// Clients sending requests until [`Load::stop`].
#[derive(Debug)]
pub struct Load {
    stop: Arc<AtomicBool>,
    clients: Vec<JoinHandle<LoadReport>>,
    started: Instant,
}

/// What the clients saw.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Requests sent (answered or not).
    pub requests: u64,
    /// Answers by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests that got no complete answer (refused, reset, closed, timed out).
    pub connection_errors: u64,
    /// Requests that did not get a 200 from an expected pod.
    pub failures: u64,
    /// The first failures, described.
    pub first_failures: Vec<String>,
    /// How long the load ran.
    pub elapsed: Duration,
}

impl Load {
    /// Starts `clients` tasks sending `GET`s to `addr`, client `i` starting
    /// at target `i % targets.len()` and moving to the next after each request.
    pub fn start(addr: SocketAddr, clients: usize, targets: Vec<LoadTarget>) -> Load {
        assert!(!targets.is_empty(), "load needs at least one target");
        let stop = Arc::new(AtomicBool::new(false));
        let targets = Arc::new(targets);
        let clients = (0..clients)
            .map(|client| {
                let stop = Arc::clone(&stop);
                let targets = Arc::clone(&targets);
                tokio::spawn(async move { run_client(addr, client, &targets, &stop).await })
            })
            .collect();
        Load {
            stop,
            clients,
            started: Instant::now(),
        }
    }

    /// Stops the clients (each finishes its request in flight) and sums up.
    pub async fn stop(self) -> LoadReport {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = LoadReport::default();
        for client in self.clients {
            let report = client.await.expect("a load client panicked");
            total.merge(report);
        }
        total.elapsed = self.started.elapsed();
        total
    }
}

/// [`Load`] on several HAProxies at once (every agent of a fleet), two
/// clients each, all on one target.
#[derive(Debug)]
pub struct FleetLoad(Vec<Load>);

impl FleetLoad {
    pub fn start(addrs: &[SocketAddr], target: &LoadTarget) -> FleetLoad {
        FleetLoad(
            addrs
                .iter()
                .map(|addr| Load::start(*addr, 2, vec![target.clone()]))
                .collect(),
        )
    }

    /// Stops every load; fails when any request failed or none was sent.
    pub async fn expect_no_failure(self, during: &str) {
        for load in self.0 {
            let report = load.stop().await;
            assert_eq!(report.failures, 0, "{during}: {report}");
            assert!(report.requests > 0, "{during}: {report}");
        }
    }
}

impl LoadReport {
    fn merge(&mut self, other: LoadReport) {
        self.requests += other.requests;
        for (status, count) in other.statuses {
            *self.statuses.entry(status).or_default() += count;
        }
        self.connection_errors += other.connection_errors;
        self.failures += other.failures;
        for failure in other.first_failures {
            if self.first_failures.len() < KEPT_FAILURES {
                self.first_failures.push(failure);
            }
        }
    }

    fn fail(&mut self, what: String) {
        self.failures += 1;
        if self.first_failures.len() < KEPT_FAILURES {
            self.first_failures.push(what);
        }
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests in {:.1?} ({:.0}/s), statuses {:?}, {} connection errors, {} failures",
            self.requests,
            self.elapsed,
            self.requests as f64 / self.elapsed.as_secs_f64().max(0.001),
            self.statuses,
            self.connection_errors,
            self.failures
        )?;
        for failure in &self.first_failures {
            write!(f, "\n  {failure}")?;
        }
        Ok(())
    }
}

async fn run_client(
    addr: SocketAddr,
    client: usize,
    targets: &[LoadTarget],
    stop: &AtomicBool,
) -> LoadReport {
    let mut report = LoadReport::default();
    let mut next = client % targets.len();
    while !stop.load(Ordering::Relaxed) {
        if report.requests > 0 {
            tokio::time::sleep(PAUSE).await;
        }
        let target = &targets[next];
        next = (next + 1) % targets.len();
        report.requests += 1;
        let response = match http::http1_get(addr, &target.host, &target.path).await {
            Ok(response) => response,
            Err(error) => {
                report.connection_errors += 1;
                report.fail(format!("client {client}: GET {}: {error}", target.host));
                continue;
            }
        };
        *report.statuses.entry(response.status).or_default() += 1;
        if response.status != 200 {
            report.fail(format!(
                "client {client}: GET {}: status {} {:?}",
                target.host,
                response.status,
                response.text()
            ));
            continue;
        }
        match serde_json::from_slice::<EchoReply>(&response.body) {
            Ok(reply) if target.pods.contains(&reply.pod) => {}
            Ok(reply) => report.fail(format!(
                "client {client}: GET {}: answered by {} of {}, expected one of {:?}",
                target.host, reply.pod, reply.service, target.pods
            )),
            Err(e) => report.fail(format!(
                "client {client}: GET {}: not an echo reply ({e}): {:?}",
                target.host,
                response.text()
            )),
        }
    }
    report
}
