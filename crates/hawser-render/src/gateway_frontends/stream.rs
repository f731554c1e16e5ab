//! TLS passthrough and TCP listeners as the `gateway` library writes them:
//! one `mode tcp` frontend per port, which hands each connection to a
//! Service port's TCP twin backend without reading what it carries.
//!
//! ```text
//!  TLS listener ──SNI of the ClientHello──► first matching TLSRoute ──► be_…_tcp
//!       │ (no route takes the name)
//!       └──► unix socket ──► the HTTPS frontend on the same port (terminates TLS)
//!  TCP listener ──────────────────────────► the oldest TCPRoute ──► be_…_tcp
//! ```
//!
//! A TLS listener on port 443 shares `settings.https_port` with the HTTPS
//! listeners and the Ingress TLS hosts: the stream frontend binds the port,
//! and `frontend ingress` then takes its TLS connections on a unix socket,
//! with the client's address carried over in a PROXY header. A socket lives
//! beside the runtime socket (or, without one, in HAProxy's working
//! directory, the rendered tree).

use std::collections::BTreeMap;

use hawser_model::{Kind, ObjectRef};
use serde::Serialize;

use super::conditions::Condition;
use super::{BackendChoice, FrontendView, Unserved};
use crate::backends::BackendKey;
use crate::config::Settings;
use crate::gateway::{
    BackendTarget, GatewayEntry, HostRank, ListenerEntry, ListenerProtocol, WeightedBackend,
    host_rank,
};
use crate::report::Diagnostics;

/// Ends the name of a Service port's backend in `mode tcp`, for TLSRoutes
/// and TCPRoutes: a twin of the HTTP one, with the same servers.
pub(crate) const TCP_SUFFIX: &str = "_tcp";

/// A `mode tcp` backend without servers: a connection sent there is closed.
/// What a route without a reachable backend gets.
pub(crate) const REFUSED_BACKEND: &str = "hawser_tcp_refused";

/// The SNI name of the ClientHello, lower-cased.
const SNI: &str = "req.ssl_sni,lower";

/// A `mode tcp` frontend for the TLS passthrough or TCP listeners on one port.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StreamFrontendView {
    /// `gw_tls_<port>` or `gw_tcp_<port>`.
    pub name: String,
    /// The port bound: the listener's, or `settings.https_port` for 443.
    pub port: u16,
    /// Waits for the TLS ClientHello and routes on its SNI name.
    pub sni: bool,
    /// First match wins.
    pub rules: Vec<StreamRuleView>,
    /// Connections no rule takes go to the frontend that terminates TLS on
    /// this port, through this unix socket; without one they are closed.
    pub terminate: Option<String>,
}

/// One TLSRoute hostname, or the TCPRoute, of a listener.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StreamRuleView {
    /// Unique in the configuration (`s<n>`); names the rule's pick variable.
    pub id: String,
    /// For a comment: `TLSRoute app/db on Gateway app/gw listener tls`.
    pub source: String,
    /// `rand(<pick>)` into `sess.gw_pick_<id>` before the choices.
    pub pick: Option<u32>,
    /// `use_backend` choices, in order; each carries the rule's conditions.
    pub backends: Vec<BackendChoice>,
}

/// A TLS host an Ingress passes through (`hawser.dev/ssl-passthrough`):
/// connections whose SNI name is `host` go to `backend` whole.
#[derive(Debug, Clone)]
pub(crate) struct Passthrough {
    pub ingress: hawser_model::ObjectKey,
    pub host: String,
    pub backend: BackendKey,
}

/// What [`stream_frontends`] adds to the view besides the frontends.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    pub frontends: Vec<StreamFrontendView>,
    /// The unix socket `frontend ingress` takes HTTPS on, when a TLS
    /// passthrough listener shares `settings.https_port`.
    pub https_socket: Option<String>,
    /// Service ports stream routes send to: each gets a TCP twin.
    pub tcp_backends: BTreeMap<BackendKey, ObjectRef>,
    /// Listeners whose port something else binds.
    pub unserved: Vec<Unserved>,
}

/// A rule with the rank it sorts by among the rules of its port.
struct Ranked {
    rank: HostRank,
    rule: StreamRuleView,
}

/// The stream frontends of every TLS passthrough and TCP listener. An HTTPS
/// frontend of its own on a port a TLS listener shares is moved behind a
/// unix socket (`own`); a listener whose port something else binds is not
/// served, with a warning.
pub(crate) fn stream_frontends(
    gateways: &[GatewayEntry],
    passthrough: &[Passthrough],
    settings: &Settings,
    own: &mut BTreeMap<u16, FrontendView>,
    diags: &mut Diagnostics,
) -> Streams {
    let mut streams = Streams::default();
    let mut by_port: BTreeMap<u16, (StreamFrontendView, Vec<Ranked>)> = BTreeMap::new();
    let mut next_id = 0usize;
    // Ingress TLS hosts passed through: SNI rules on the HTTPS port, as a
    // TLS listener on 443 makes them.
    for entry in passthrough {
        let port = settings.https_port;
        let (_, rules) = by_port.entry(port).or_insert_with(|| {
            let frontend = StreamFrontendView {
                name: format!("gw_tls_{port}"),
                port,
                sni: true,
                rules: Vec::new(),
                terminate: None,
            };
            (frontend, Vec::new())
        });
        next_id += 1;
        let conditions: Vec<Condition> = sni_condition(Some(&entry.host)).into_iter().collect();
        let rule = StreamRuleView {
            id: format!("s{next_id}"),
            source: format!("Ingress {} (ssl-passthrough)", entry.ingress),
            pick: None,
            backends: vec![BackendChoice {
                backend: format!("{}{TCP_SUFFIX}", entry.backend.name()),
                when: conditions,
            }],
        };
        streams
            .tcp_backends
            .entry(entry.backend.clone())
            .or_insert_with(|| ObjectRef::new(Kind::Ingress, entry.ingress.clone()));
        rules.push(Ranked {
            rank: host_rank(Some(&entry.host)),
            rule,
        });
    }
    for gateway in gateways {
        for listener in &gateway.listeners {
            let sni = match listener.protocol {
                ListenerProtocol::Tls => true,
                ListenerProtocol::Tcp => false,
                ListenerProtocol::Http | ListenerProtocol::Https => continue,
            };
            let port = match bound_port(listener, settings, own) {
                Ok(port) => port,
                Err(why) => {
                    let unserved = Unserved::warn(diags, &gateway.gateway, listener, why);
                    streams.unserved.push(unserved);
                    continue;
                }
            };
            let (frontend, rules) = by_port.entry(port).or_insert_with(|| {
                let kind = if sni { "tls" } else { "tcp" };
                let frontend = StreamFrontendView {
                    name: format!("gw_{kind}_{port}"),
                    port,
                    sni,
                    rules: Vec::new(),
                    terminate: None,
                };
                (frontend, Vec::new())
            });
            if frontend.sni != sni {
                let why = "a listener with another protocol binds it";
                streams
                    .unserved
                    .push(Unserved::warn(diags, &gateway.gateway, listener, why));
                continue;
            }
            let origin = format!("on Gateway {} listener {}", gateway.gateway, listener.name);
            rules.extend(listener_rules(
                listener,
                &origin,
                &mut next_id,
                &mut streams,
            ));
        }
    }
    for (mut frontend, mut rules) in by_port.into_values() {
        // Across listeners sharing a port, the most specific SNI name first
        // (within one listener the table already ordered them).
        rules.sort_by_key(|r| r.rank);
        frontend.rules = rules.into_iter().map(|r| r.rule).collect();
        if frontend.sni {
            let socket = terminate_socket(settings, frontend.port);
            if frontend.port == settings.https_port {
                streams.https_socket = Some(socket.clone());
                frontend.terminate = Some(socket);
            } else if let Some(https) = own.get_mut(&frontend.port) {
                https.socket = Some(socket.clone());
                frontend.terminate = Some(socket);
            }
        }
        streams.frontends.push(frontend);
    }
    streams
}

/// The port a stream listener binds, or why it cannot: a TLS listener on
/// 443 shares `settings.https_port`, one elsewhere may share its port with
/// HTTPS listeners only; no other port may be bound twice.
fn bound_port(
    listener: &ListenerEntry,
    settings: &Settings,
    own: &BTreeMap<u16, FrontendView>,
) -> Result<u16, &'static str> {
    let tls = listener.protocol == ListenerProtocol::Tls;
    if tls && listener.port == 443 {
        return Ok(settings.https_port);
    }
    let taken = [
        Some(settings.http_port),
        Some(settings.https_port),
        settings.health_port,
        Some(80),
        Some(443),
    ];
    if taken.contains(&Some(listener.port)) {
        return Err("another listener binds it");
    }
    match own.get(&listener.port) {
        Some(https) if tls && https.tls => Ok(listener.port),
        Some(_) => Err("a listener with another protocol binds it"),
        None => Ok(listener.port),
    }
}

/// A TLS listener's routes, one rule per SNI name; a TCP listener's oldest
/// route (a connection carries nothing else to choose by).
fn listener_rules(
    listener: &ListenerEntry,
    origin: &str,
    next_id: &mut usize,
    streams: &mut Streams,
) -> Vec<Ranked> {
    let mut rules = Vec::new();
    let mut add = |kind: Kind,
                   route: &hawser_model::ObjectKey,
                   hostname: Option<&str>,
                   backends: &[WeightedBackend],
                   unavailable: bool| {
        *next_id += 1;
        let id = format!("s{next_id}");
        let conditions: Vec<Condition> = sni_condition(hostname).into_iter().collect();
        let mut rule = StreamRuleView {
            id,
            source: format!("{} {route} {origin}", kind.as_str()),
            pick: None,
            backends: Vec::new(),
        };
        if unavailable {
            rule.backends.push(refused(conditions));
        } else {
            weighted(&mut rule, backends, &conditions);
        }
        for backend in backends {
            if let BackendTarget::Service { key, .. } = &backend.target {
                streams
                    .tcp_backends
                    .entry(key.clone())
                    .or_insert_with(|| ObjectRef::new(kind, route.clone()));
            }
        }
        rules.push(Ranked {
            rank: host_rank(hostname),
            rule,
        });
    };
    match listener.protocol {
        ListenerProtocol::Tls => {
            for e in &listener.tls_routes {
                add(
                    Kind::TlsRoute,
                    &e.route,
                    e.hostname.as_deref(),
                    &e.backends,
                    e.unavailable,
                );
            }
        }
        ListenerProtocol::Tcp => {
            if let Some(e) = listener.tcp_routes.first() {
                add(Kind::TcpRoute, &e.route, None, &e.backends, e.unavailable);
            }
        }
        ListenerProtocol::Http | ListenerProtocol::Https => {}
    }
    rules
}

/// `*.example.com` matches any number of labels before `.example.com`;
/// `None` takes every connection, with or without an SNI name.
fn sni_condition(hostname: Option<&str>) -> Option<Condition> {
    let hostname = hostname?;
    Some(match hostname.strip_prefix('*') {
        Some(suffix) => Condition::new(SNI, "-m end", suffix),
        None => Condition::new(SNI, "-m str", hostname),
    })
}

fn refused(when: Vec<Condition>) -> BackendChoice {
    BackendChoice {
        backend: REFUSED_BACKEND.to_string(),
        when,
    }
}

/// Weighted choice between the route's backends through the rule's own
/// pick variable; an unresolved share is refused.
fn weighted(rule: &mut StreamRuleView, backends: &[WeightedBackend], conditions: &[Condition]) {
    let live: Vec<&WeightedBackend> = backends.iter().filter(|b| b.weight > 0).collect();
    if live.is_empty() {
        rule.backends.push(refused(conditions.to_vec()));
        return;
    }
    let total: u32 = live.iter().map(|b| b.weight).sum();
    let split = live.len() > 1;
    if split {
        rule.pick = Some(total);
    }
    let pick = format!("var(sess.gw_pick_{})", rule.id);
    let mut from = 0u32;
    for backend in live {
        let to = from + backend.weight;
        let mut when = conditions.to_vec();
        if split {
            when.push(Condition::new(pick.clone(), "-m int ge", from.to_string()));
            when.push(Condition::new(pick.clone(), "-m int lt", to.to_string()));
        }
        rule.backends.push(match &backend.target {
            BackendTarget::Service { backend, .. } => BackendChoice {
                backend: format!("{backend}{TCP_SUFFIX}"),
                when,
            },
            BackendTarget::Unresolved { .. } => refused(when),
        });
        from = to;
    }
}

/// The unix socket the TLS-terminating frontend on `port` listens on:
/// beside the runtime socket, or relative to HAProxy's working directory.
fn terminate_socket(settings: &Settings, port: u16) -> String {
    let file = format!("https-{port}.sock");
    match settings
        .runtime_socket
        .as_deref()
        .and_then(|socket| socket.rsplit_once('/'))
    {
        Some((dir, _)) => format!("{dir}/{file}"),
        None => file,
    }
}

#[cfg(test)]
mod tests;
