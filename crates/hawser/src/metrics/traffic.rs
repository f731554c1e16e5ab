//! HAProxy's traffic by Kubernetes names, read from its counters at each
//! scrape: per Service port (`hawser_service_*`, from `show stat`), per
//! route (`hawser_route_*`, from the routes stick table) and the old
//! workers still draining (`show proc`).
//!
//! A Service's series sum the backends that serve it in the version
//! HAProxy serves ([`ServedBackends`]): its own, its HTTP/2 or TCP twin, or
//! a spare lent to it. A spare's counters still hold what it served for
//! the Services it was lent to before, so they are counted from the first
//! scrape that sees it serve this Service: requests a Service sends through
//! a spare before that scrape are not counted, and nothing of another
//! Service ever is. HAProxy's counters start again at a reload (a new
//! worker), which Prometheus reads as a counter reset.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use hawser_agent::{AgentHandle, ServedBackends};
use hawser_haproxy::{StatRow, Stats, TableEntry};
use hawser_plan::{RESPONSE_CLASSES, ROUTES_TABLE, ServicePort};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tracing::debug;

/// How long a scrape waits for HAProxy's counters before going without.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// `show stat`'s response class columns, in [`RESPONSE_CLASSES`] order.
const RESPONSE_COLUMNS: [&str; RESPONSE_CLASSES.len()] = [
    "hrsp_1xx",
    "hrsp_2xx",
    "hrsp_3xx",
    "hrsp_4xx",
    "hrsp_5xx",
    "hrsp_other",
];

/// What each backend's counters read when it started serving its Service
/// (zero for a Service's own backend), by backend name.
#[derive(Debug, Default)]
pub struct Traffic {
    baselines: Mutex<HashMap<String, Baseline>>,
}

#[derive(Debug, Clone)]
struct Baseline {
    service: ServicePort,
    counters: Counters,
}

/// A backend's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counters {
    requests: u64,
    responses: [u64; RESPONSE_CLASSES.len()],
    bytes_in: u64,
    bytes_out: u64,
    connection_errors: u64,
    response_errors: u64,
}

impl Counters {
    fn of(row: &StatRow<'_>) -> Self {
        Counters {
            requests: row.number("req_tot"),
            responses: RESPONSE_COLUMNS.map(|column| row.number(column)),
            bytes_in: row.number("bin"),
            bytes_out: row.number("bout"),
            connection_errors: row.number("econ"),
            response_errors: row.number("eresp"),
        }
    }

    /// Counters since `base`; `None` when one went down (a new worker).
    fn since(&self, base: &Counters) -> Option<Counters> {
        let mut responses = [0; RESPONSE_CLASSES.len()];
        for (i, slot) in responses.iter_mut().enumerate() {
            *slot = self.responses[i].checked_sub(base.responses[i])?;
        }
        Some(Counters {
            requests: self.requests.checked_sub(base.requests)?,
            responses,
            bytes_in: self.bytes_in.checked_sub(base.bytes_in)?,
            bytes_out: self.bytes_out.checked_sub(base.bytes_out)?,
            connection_errors: self.connection_errors.checked_sub(base.connection_errors)?,
            response_errors: self.response_errors.checked_sub(base.response_errors)?,
        })
    }

    fn add(&mut self, other: &Counters) {
        self.requests += other.requests;
        for (mine, theirs) in self.responses.iter_mut().zip(other.responses) {
            *mine += theirs;
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.connection_errors += other.connection_errors;
        self.response_errors += other.response_errors;
    }
}

/// One Service port's figures in one scrape.
#[derive(Debug, Default)]
struct ServiceFigures {
    counters: Counters,
    queue: u64,
    /// Servers by state (`up`, `down`, `maint`, `drain`).
    servers: BTreeMap<&'static str, u64>,
    /// The averages of its busiest backend, in milliseconds: queue,
    /// connect, response, total.
    times_ms: [u64; 4],
    busiest: u64,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServiceLabels {
    namespace: String,
    service: String,
    port: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServiceClassLabels {
    namespace: String,
    service: String,
    port: String,
    code: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServiceStateLabels {
    namespace: String,
    service: String,
    port: String,
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    namespace: String,
    kind: String,
    name: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteClassLabels {
    namespace: String,
    kind: String,
    name: String,
    code: &'static str,
}

impl Traffic {
    /// Reads HAProxy's counters and appends the series they make to `out`
    /// (text format, no `# EOF`). What cannot be read is left out, and
    /// said in the debug log: a scrape never waits on HAProxy for long.
    pub async fn encode(&self, agent: &AgentHandle, out: &mut String) {
        let served = agent.served();
        let runtime = agent.runtime();
        let (stats, routes, procs) = tokio::join!(
            tokio::time::timeout(READ_TIMEOUT, runtime.show_stat()),
            tokio::time::timeout(READ_TIMEOUT, runtime.show_table(ROUTES_TABLE)),
            tokio::time::timeout(READ_TIMEOUT, agent.master().show_proc()),
        );
        let mut registry = Registry::with_prefix("hawser");
        match stats {
            Ok(Ok(stats)) => self.register_services(&mut registry, &stats, &served),
            Ok(Err(e)) => debug!("no per-Service traffic in this scrape: show stat: {e}"),
            Err(_) => debug!("no per-Service traffic in this scrape: show stat timed out"),
        }
        match routes {
            Ok(Ok(entries)) => register_routes(&mut registry, &entries),
            // A template set without the routes table counts no routes.
            Ok(Err(e)) => debug!("no per-route traffic in this scrape: {e}"),
            Err(_) => debug!("no per-route traffic in this scrape: show table timed out"),
        }
        if let Ok(Ok(procs)) = procs {
            let old = Gauge::<i64>::default();
            old.set(i64::try_from(procs.old_workers.len()).unwrap_or(i64::MAX));
            registry.register(
                "haproxy_old_workers",
                "HAProxy workers of earlier configurations still draining their connections",
                old,
            );
        }
        if prometheus_client::encoding::text::encode_registry(out, &registry).is_err() {
            debug!("cannot encode the traffic series");
        }
    }

    fn register_services(&self, registry: &mut Registry, stats: &Stats, served: &ServedBackends) {
        let figures = self.service_figures(stats, served);
        let requests = Family::<ServiceLabels, Counter>::default();
        let responses = Family::<ServiceClassLabels, Counter>::default();
        let bytes_in = Family::<ServiceLabels, Counter>::default();
        let bytes_out = Family::<ServiceLabels, Counter>::default();
        let connection_errors = Family::<ServiceLabels, Counter>::default();
        let response_errors = Family::<ServiceLabels, Counter>::default();
        let queue = Family::<ServiceLabels, Gauge>::default();
        let servers = Family::<ServiceStateLabels, Gauge>::default();
        let times: [Family<ServiceLabels, Gauge<f64, std::sync::atomic::AtomicU64>>; 4] =
            Default::default();
        for (service, f) in &figures {
            let labels = ServiceLabels {
                namespace: service.namespace.clone(),
                service: service.service.clone(),
                port: service.port.clone(),
            };
            let c = &f.counters;
            requests.get_or_create(&labels).inc_by(c.requests);
            for (code, count) in RESPONSE_CLASSES.iter().zip(c.responses) {
                let class = ServiceClassLabels {
                    namespace: labels.namespace.clone(),
                    service: labels.service.clone(),
                    port: labels.port.clone(),
                    code,
                };
                responses.get_or_create(&class).inc_by(count);
            }
            bytes_in.get_or_create(&labels).inc_by(c.bytes_in);
            bytes_out.get_or_create(&labels).inc_by(c.bytes_out);
            connection_errors
                .get_or_create(&labels)
                .inc_by(c.connection_errors);
            response_errors
                .get_or_create(&labels)
                .inc_by(c.response_errors);
            queue
                .get_or_create(&labels)
                .set(i64::try_from(f.queue).unwrap_or(i64::MAX));
            for state in SERVER_STATES {
                let state_labels = ServiceStateLabels {
                    namespace: labels.namespace.clone(),
                    service: labels.service.clone(),
                    port: labels.port.clone(),
                    state,
                };
                let count = f.servers.get(state).copied().unwrap_or(0);
                servers
                    .get_or_create(&state_labels)
                    .set(i64::try_from(count).unwrap_or(i64::MAX));
            }
            for (family, ms) in times.iter().zip(f.times_ms) {
                family.get_or_create(&labels).set(ms as f64 / 1000.0);
            }
        }
        registry.register(
            "service_requests",
            "HTTP requests sent to a Service port's backends",
            requests,
        );
        registry.register(
            "service_responses",
            "Responses from a Service port's backends, by class (1xx ... 5xx, other)",
            responses,
        );
        registry.register(
            "service_bytes_in",
            "Bytes received from clients for a Service port",
            bytes_in,
        );
        registry.register(
            "service_bytes_out",
            "Bytes sent to clients from a Service port",
            bytes_out,
        );
        registry.register(
            "service_connection_errors",
            "Connections to a Service port's pods that failed",
            connection_errors,
        );
        registry.register(
            "service_response_errors",
            "Responses from a Service port's pods that failed (aborted or invalid)",
            response_errors,
        );
        registry.register(
            "service_queue_current",
            "Requests queued for a Service port, waiting for a free server",
            queue,
        );
        registry.register(
            "service_servers",
            "A Service port's servers (its endpoints) by state: up, down, maint, drain",
            servers,
        );
        let [queue_time, connect_time, response_time, total_time] = times;
        for (name, help, family) in [
            (
                "service_queue_time_seconds",
                "Average time in queue of a Service port's last 1024 requests",
                queue_time,
            ),
            (
                "service_connect_time_seconds",
                "Average time to connect to a pod of a Service port, over its last 1024 requests",
                connect_time,
            ),
            (
                "service_response_time_seconds",
                "Average time to the first response byte from a Service port, over its last 1024 requests",
                response_time,
            ),
            (
                "service_total_time_seconds",
                "Average total time of a Service port's last 1024 requests",
                total_time,
            ),
        ] {
            registry.register(name, help, family);
        }
    }

    /// Sums each Service's backends, counting each backend from its
    /// baseline, and keeps the baselines for the next scrape.
    fn service_figures(
        &self,
        stats: &Stats,
        served: &ServedBackends,
    ) -> BTreeMap<ServicePort, ServiceFigures> {
        let mut baselines = self
            .baselines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut seen: HashMap<String, Baseline> = HashMap::new();
        let mut figures: BTreeMap<ServicePort, ServiceFigures> = BTreeMap::new();
        for row in stats.rows() {
            let Some(backend) = served.get(row.proxy()) else {
                continue;
            };
            let f = figures.entry(backend.service.clone()).or_default();
            if !row.is_backend() {
                *f.servers
                    .entry(server_state(row.text("status")))
                    .or_default() += 1;
                continue;
            }
            let now = Counters::of(&row);
            let base = match baselines.get(row.proxy()) {
                Some(was) if was.service == backend.service => now.since(&was.counters).map_or(
                    Counters::default(), // a new worker: every counter started again
                    |_| was.counters,
                ),
                // A spare's history is another Service's.
                _ if backend.spare => now,
                _ => Counters::default(),
            };
            let counted = now.since(&base).unwrap_or_default();
            f.counters.add(&counted);
            f.queue += row.number("qcur");
            if counted.requests >= f.busiest {
                f.busiest = counted.requests;
                f.times_ms = ["qtime", "ctime", "rtime", "ttime"].map(|c| row.number(c));
            }
            seen.insert(
                row.proxy().to_string(),
                Baseline {
                    service: backend.service.clone(),
                    counters: base,
                },
            );
        }
        *baselines = seen;
        figures
    }
}

/// The server states a Service's series count.
const SERVER_STATES: [&str; 4] = ["up", "down", "maint", "drain"];

/// A server's `status` in `show stat` (`UP`, `UP 1/3`, `DOWN`, `MAINT`,
/// `MAINT (resolution)`, `DRAIN`, `NOLB`, `no check`) as one of
/// [`SERVER_STATES`]: a server without health checks takes traffic, so it
/// counts as up; one going up or down counts as what it still is.
fn server_state(status: &str) -> &'static str {
    let first = status.split_whitespace().next().unwrap_or_default();
    match first {
        "UP" | "no" => "up",
        "MAINT" => "maint",
        "DRAIN" | "NOLB" => "drain",
        _ => "down",
    }
}

fn register_routes(registry: &mut Registry, entries: &[TableEntry]) {
    let requests = Family::<RouteLabels, Counter>::default();
    let responses = Family::<RouteClassLabels, Counter>::default();
    for entry in entries {
        let mut parts = entry.key.splitn(3, '/');
        let (Some(kind), Some(namespace), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let labels = RouteLabels {
            namespace: namespace.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
        };
        requests
            .get_or_create(&labels)
            .inc_by(entry.counter("http_req_cnt"));
        for (i, code) in RESPONSE_CLASSES.iter().enumerate() {
            let class = RouteClassLabels {
                namespace: labels.namespace.clone(),
                kind: labels.kind.clone(),
                name: labels.name.clone(),
                code,
            };
            responses
                .get_or_create(&class)
                .inc_by(entry.counter(&format!("gpc{i}")));
        }
    }
    registry.register(
        "route_requests",
        "HTTP requests a route (an Ingress) served",
        requests,
    );
    registry.register(
        "route_responses",
        "Responses to a route's requests, by class (1xx ... 5xx, other)",
        responses,
    );
}

#[cfg(test)]
mod tests;
