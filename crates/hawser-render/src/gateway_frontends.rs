//! The `gateway` library's Rust half: the Gateway API routing table as the
//! templates read it, with every HAProxy condition and action stated as typed
//! fields, so a template never has to decode the table's enums.
//!
//! ```text
//!  GatewayTable ──listeners (HTTP, HTTPS)──► where served ──► GatewayView
//!    rules in precedence order                │                  ingress_rules (frontend ingress)
//!                                             │                  frontends (a port of their own)
//!                                             │                  mirror (when a rule mirrors)
//!                                             └─► RuleView: id, conditions, actions, backends
//!  GatewayTable ──listeners (TLS passthrough, TCP)──► streams (`mode tcp`, see `stream`)
//! ```
//!
//! GRPCRoute rules follow the listener's HTTPRoute rules (the two kinds never
//! share a hostname on a listener); their backends speak HTTP/2 in clear text.
//! A rule that mirrors ends its actions with a Lua action sending the copy
//! (see [`mirror`]); only then does the view carry a [`MirrorView`].
//!
//! A listener on port 80 (HTTP) or 443 (HTTPS) is served by `frontend
//! ingress` on `settings.http_port` / `settings.https_port`, ahead of the
//! Ingress maps; a listener on another port gets a frontend of its own on
//! that port. HAProxy evaluates rules first-match-wins: the first rule whose
//! conditions hold names itself in `txn.gw_rule`, and every action of a rule
//! is keyed on that name.
//!
//! User strings reach haproxy.cfg only after the table validated them, and
//! only as condition values or log-format strings that the templates write
//! through the `quote` filter ([`log_format_literal`] escapes `%` first).

mod actions;
mod conditions;
mod grpc;
mod map_routes;
mod mirror;
mod stream;

use std::collections::BTreeMap;

use hawser_model::{Kind, ObjectKey, ObjectRef};
use serde::Serialize;

pub(crate) use self::conditions::Condition;
pub(crate) use self::grpc::method_regex;
pub(crate) use self::map_routes::GATEWAY_MAP_PATH;
use self::map_routes::GatewayMap;
pub(crate) use self::mirror::{LUA_PATH, MIRROR_LUA, MirrorView};
pub(crate) use self::stream::{Passthrough, REFUSED_BACKEND, StreamFrontendView, TCP_SUFFIX};
use crate::backends::BackendKey;
use crate::config::Settings;
use crate::gateway::{
    BackendTarget, GatewayTable, HttpRuleEntry, ListenerEntry, ListenerProtocol, WeightedBackend,
};
use crate::report::Diagnostics;

/// Ends the name of a Service port's backend that speaks HTTP/2 in clear
/// text (h2c), for GRPCRoutes: a backend of its own, beside the HTTP/1.1 one.
pub(crate) const H2_SUFFIX: &str = "_h2";

/// What the `gateway` library templates read (`gateway` in the context).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct GatewayView {
    /// Rules served by `frontend ingress`, before its Ingress maps.
    pub ingress_rules: Vec<RuleView>,
    /// `frontend ingress`'s scope in the gateway map, when it serves a
    /// Gateway listener (see `map_routes`).
    pub ingress_scope: Option<String>,
    /// Path of the gateway map (simple HTTPRoute rules, runtime-updatable).
    pub map: &'static str,
    /// The gateway map's second copy, and the map naming the copy requests
    /// read (see `hawser_plan::MapPlan::twin`).
    pub twin_map: &'static str,
    pub live_twins_map: &'static str,
    /// Listeners the table accepted whose port this configuration cannot
    /// serve; the render marks them in the status.
    #[serde(skip)]
    pub unserved: Vec<Unserved>,
    /// The gateway map, when a frontend serves a Gateway listener; the
    /// render takes it into the plan.
    #[serde(skip)]
    pub map_plan: Option<hawser_plan::MapPlan>,
    /// Listeners on other ports, one frontend per port, by port.
    pub frontends: Vec<FrontendView>,
    /// Service ports GRPCRoutes send to, with the first route that asked:
    /// each gets an h2c backend named with [`H2_SUFFIX`].
    #[serde(skip)]
    pub h2_backends: BTreeMap<BackendKey, ObjectRef>,
    /// TLS passthrough and TCP listeners, one `mode tcp` frontend per port.
    pub streams: Vec<StreamFrontendView>,
    /// The `mode tcp` backend without servers that closes what no stream
    /// route can take ([`REFUSED_BACKEND`]).
    pub refused_backend: &'static str,
    /// When set, `frontend ingress` takes HTTPS on this unix socket instead
    /// of `settings.https_port`, behind the stream frontend that passes
    /// some SNI names through on that port.
    pub https_socket: Option<String>,
    /// Service ports TLSRoutes and TCPRoutes send to, with the first route
    /// that asked: each gets a `mode tcp` backend named with [`TCP_SUFFIX`].
    #[serde(skip)]
    pub tcp_backends: BTreeMap<BackendKey, ObjectRef>,
    /// Request mirrors, when a rule mirrors; `None` otherwise (no Lua then).
    pub mirror: Option<MirrorView>,
}

/// A listener the table accepted whose port this configuration cannot
/// serve: something else binds it.
#[derive(Debug, Clone)]
pub(crate) struct Unserved {
    pub gateway: ObjectKey,
    pub listener: String,
    /// `port <port> with protocol <protocol> cannot be served, <why>`.
    pub message: String,
}

impl Unserved {
    /// Warns that `listener` of `gateway` is not served, and why.
    fn warn(
        diags: &mut Diagnostics,
        gateway: &ObjectKey,
        listener: &ListenerEntry,
        why: &str,
    ) -> Unserved {
        let message = format!(
            "port {} with protocol {:?} cannot be served, {why}",
            listener.port, listener.protocol
        );
        diags.warn(
            &ObjectRef::new(Kind::Gateway, gateway.clone()),
            format!("listener {:?}: {message}", listener.name),
        );
        Unserved {
            gateway: gateway.clone(),
            listener: listener.name.clone(),
            message,
        }
    }
}

/// A frontend of its own for the listeners on one port.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FrontendView {
    /// `gw_<port>`; also its scope in the gateway map.
    pub name: String,
    pub port: u16,
    /// Binds with TLS on the shared crt-list (an HTTPS listener is on it).
    pub tls: bool,
    /// Binds this unix socket instead of the port, behind the stream
    /// frontend of a TLS passthrough listener on the same port.
    pub socket: Option<String>,
    pub rules: Vec<RuleView>,
}

/// One match of one route rule on one listener and hostname.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RuleView {
    /// Unique in the configuration (`r<n>`); what `txn.gw_rule` holds.
    pub id: String,
    /// Where the rule stands in the spec's precedence, as a number the
    /// gateway map's entries carry too: lower goes first.
    pub rank: u64,
    /// For a comment: `HTTPRoute app/web rule 0 match 1 on Gateway app/gw listener http`.
    pub source: String,
    /// The route it comes from, `<kind>/<namespace>/<name>`: what its
    /// requests are counted by (see `base/route_counters.cfg`).
    pub owner: String,
    /// All must hold for the rule to be chosen.
    pub conditions: Vec<Condition>,
    /// `rand(<pick>)` into `txn.gw_pick` before weighted choices.
    pub pick: Option<u32>,
    /// `http-request` actions, in order.
    pub request: Vec<Action>,
    /// `http-response` actions, in order.
    pub response: Vec<Action>,
    /// `use_backend` choices, in order.
    pub backends: Vec<BackendChoice>,
}

impl RuleView {
    /// A rule of precedence `rank` chosen when `conditions` hold, with no
    /// actions yet.
    fn new(id: String, rank: u64, source: String, conditions: Vec<Condition>) -> RuleView {
        RuleView {
            id,
            rank,
            source,
            owner: String::new(),
            conditions,
            pick: None,
            request: Vec::new(),
            response: Vec::new(),
            backends: Vec::new(),
        }
    }

    /// No request it chooses can reach a backend: it answers 500.
    fn answering_500(mut self, chosen: Vec<Condition>) -> RuleView {
        self.request.push(Action {
            step: Step::Return { status: 500 },
            when: chosen,
        });
        self
    }
}

/// One action, under its own conditions (the rule's, plus the weighted
/// choice it belongs to for a backend's own filters).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Action {
    #[serde(flatten)]
    pub step: Step,
    pub when: Vec<Condition>,
}

/// What an action does; `kind` names it in templates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Step {
    /// `http-request return status <status>`.
    Return {
        status: u16,
    },
    /// `http-request redirect location <location> code <code>`; a log-format.
    Redirect {
        location: String,
        code: i64,
    },
    /// Header changes; `value` is a log-format.
    SetHeader {
        name: String,
        value: String,
    },
    AddHeader {
        name: String,
        value: String,
    },
    DelHeader {
        name: String,
    },
    /// `txn.gw_rest` = the path after its first `offset` bytes (the part a
    /// matched prefix leaves).
    KeepPathAfter {
        offset: usize,
    },
    /// `txn.gw_new_path` = `format` (a log-format), or `/` when that is empty.
    NewPath {
        format: String,
    },
    /// `http-request set-path <format>`.
    SetPath {
        format: String,
    },
    /// `txn.gw_timeout` = `ms`: every backend sets its `timeout server` from it.
    ServerTimeout {
        ms: u64,
    },
    /// `http-request lua.hawser_mirror <backend>`: a copy of the request goes
    /// to `backend` (a validated backend name), its answer ignored.
    Mirror {
        backend: String,
    },
}

/// `use_backend <backend> if <when>`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BackendChoice {
    pub backend: String,
    pub when: Vec<Condition>,
}

/// Escapes `%` so a literal survives in a log-format string.
pub(crate) fn log_format_literal(value: &str) -> String {
    value.replace('%', "%%")
}

/// `frontend ingress`'s scope in the gateway map.
const INGRESS_SCOPE: &str = "ingress";

/// Where a listener is served: `None` for `frontend ingress`, else its port.
fn own_port(listener: &ListenerEntry) -> Option<u16> {
    match (listener.port, listener.protocol) {
        (80, ListenerProtocol::Http) | (443, ListenerProtocol::Https) => None,
        (port, _) => Some(port),
    }
}

/// The view of every listener: HTTP and HTTPS ones with their HTTPRoute and
/// GRPCRoute rules, TLS passthrough and TCP ones as stream frontends.
/// A listener that would need a frontend of its own on a port the
/// configuration already binds (the HTTP, HTTPS or health port, or 80 / 443
/// with the other protocol) is not served, with a warning: binding it twice
/// would make HAProxy refuse the whole configuration.
pub(crate) fn gateway_view(
    table: &GatewayTable,
    passthrough: &[Passthrough],
    settings: &Settings,
    diags: &mut Diagnostics,
) -> GatewayView {
    let taken = [
        Some(settings.http_port),
        Some(settings.https_port),
        settings.health_port,
        Some(80),
        Some(443),
    ];
    let mut view = GatewayView::default();
    let mut own: BTreeMap<u16, FrontendView> = BTreeMap::new();
    let mut map = GatewayMap::default();
    let mut next_id = 0usize;
    for gateway in &table.gateways {
        for listener in &gateway.listeners {
            if !matches!(
                listener.protocol,
                ListenerProtocol::Http | ListenerProtocol::Https
            ) {
                continue;
            }
            if let Some(port) = own_port(listener)
                && taken.contains(&Some(port))
            {
                let why = "another listener binds it";
                view.unserved
                    .push(Unserved::warn(diags, &gateway.gateway, listener, why));
                continue;
            }
            let origin = format!("on Gateway {} listener {}", gateway.gateway, listener.name);
            let frontend =
                own_port(listener).map_or(INGRESS_SCOPE.to_string(), |p| format!("gw_{p}"));
            let scope = map_routes::scope(&frontend, listener.protocol);
            let mut rules: Vec<RuleView> = Vec::new();
            for entry in &listener.http_rules {
                let rank = map_routes::rank(entry);
                let host = entry.hostname.as_deref();
                match map_routes::simple_backend(entry) {
                    Some(backend) if !map.ties(&scope, rank, host) => {
                        map.add(&scope, entry, backend);
                    }
                    _ => {
                        map.note_acl(&scope, rank, host);
                        next_id += 1;
                        rules.push(http_rule(format!("r{next_id}"), &origin, listener, entry));
                    }
                }
            }
            for entry in &listener.grpc_rules {
                next_id += 1;
                let id = format!("r{next_id}");
                rules.push(grpc::grpc_rule(id, &origin, listener, entry));
                for backend in &entry.backends {
                    if let BackendTarget::Service { key, .. } = &backend.target {
                        view.h2_backends.entry(key.clone()).or_insert_with(|| {
                            ObjectRef::new(Kind::GrpcRoute, entry.route.clone())
                        });
                    }
                }
            }
            match own_port(listener) {
                None => {
                    view.ingress_scope = Some(INGRESS_SCOPE.to_string());
                    view.ingress_rules.extend(rules);
                }
                Some(port) => {
                    let frontend = own.entry(port).or_insert_with(|| FrontendView {
                        name: format!("gw_{port}"),
                        port,
                        tls: false,
                        socket: None,
                        rules: Vec::new(),
                    });
                    frontend.tls |= listener.protocol == ListenerProtocol::Https;
                    frontend.rules.extend(rules);
                }
            }
        }
    }
    let streams = stream::stream_frontends(&table.gateways, passthrough, settings, &mut own, diags);
    view.refused_backend = REFUSED_BACKEND;
    view.streams = streams.frontends;
    view.https_socket = streams.https_socket;
    view.tcp_backends = streams.tcp_backends;
    view.unserved.extend(streams.unserved);
    view.map = GATEWAY_MAP_PATH;
    view.twin_map = hawser_plan::GATEWAY_TWIN_MAP_PATH;
    view.live_twins_map = hawser_plan::LIVE_TWINS_MAP_PATH;
    if view.ingress_scope.is_some() || !own.is_empty() {
        view.map_plan = Some(map.into_plan());
    }
    view.frontends = own.into_values().collect();
    let rules = view
        .ingress_rules
        .iter()
        .chain(view.frontends.iter().flat_map(|f| &f.rules));
    view.mirror = mirror::mirror_view(settings, rules);
    view
}

fn http_rule(
    id: String,
    origin: &str,
    listener: &ListenerEntry,
    entry: &HttpRuleEntry,
) -> RuleView {
    let mut conditions = vec![conditions::tls(listener.protocol)];
    conditions.extend(conditions::host(entry.hostname.as_deref()));
    conditions.extend(conditions::path(&entry.path));
    conditions.extend(entry.method.as_deref().map(conditions::method));
    conditions.extend(entry.headers.iter().map(conditions::header));
    conditions.extend(entry.query_params.iter().map(conditions::query_param));
    let chosen = vec![conditions::rule_is(&id)];
    let source = format!(
        "HTTPRoute {} rule {} match {} {origin}",
        entry.route, entry.rule_index, entry.match_index
    );
    let mut rule = RuleView::new(id, map_routes::rank(entry), source, conditions);
    rule.owner = route_owner(Kind::HttpRoute, &entry.route);
    if entry.unavailable {
        return rule.answering_500(chosen);
    }
    let ctx = actions::FilterContext {
        listener,
        prefix: prefix_of(entry),
    };
    let redirects = actions::add_filters(&mut rule, &entry.filters, &chosen, &ctx);
    if let Some(ms) = entry
        .timeouts
        .backend_request_ms
        .or(entry.timeouts.request_ms)
        .filter(|ms| *ms > 0)
    {
        rule.request.push(Action {
            step: Step::ServerTimeout { ms },
            when: chosen.clone(),
        });
    }
    if !redirects {
        weighted(&mut rule, &entry.backends, &chosen, &ctx, "");
    }
    rule
}

/// The matched prefix a ReplacePrefixMatch replaces, without a trailing `/`.
fn prefix_of(entry: &HttpRuleEntry) -> Option<String> {
    (entry.path.kind == hawser_model::PathMatchKind::PathPrefix)
        .then(|| entry.path.value.trim_end_matches('/').to_string())
}

/// Weighted choice between the rule's backends: each backend with a weight
/// gets a share of `rand(total)`; an unresolved share answers 500.
/// `suffix` ends each backend's name ([`H2_SUFFIX`] for gRPC).
fn weighted(
    rule: &mut RuleView,
    backends: &[WeightedBackend],
    chosen: &[Condition],
    ctx: &actions::FilterContext<'_>,
    suffix: &str,
) {
    let live: Vec<&WeightedBackend> = backends.iter().filter(|b| b.weight > 0).collect();
    let total: u32 = live.iter().map(|b| b.weight).sum();
    let split = live.len() > 1;
    if split {
        rule.pick = Some(total);
    }
    let mut from = 0u32;
    for backend in live {
        let to = from + backend.weight;
        let mut when = chosen.to_vec();
        if split {
            when.extend(conditions::pick_range(from, to));
        }
        actions::add_filters(rule, &backend.filters, &when, ctx);
        match &backend.target {
            BackendTarget::Service { backend, .. } => rule.backends.push(BackendChoice {
                backend: format!("{backend}{suffix}"),
                when,
            }),
            BackendTarget::Unresolved { .. } => rule.request.push(Action {
                step: Step::Return { status: 500 },
                when,
            }),
        }
        from = to;
    }
}

#[cfg(test)]
mod tests;

/// `<kind>/<namespace>/<name>`: how a route's requests are counted.
pub(crate) fn route_owner(kind: Kind, route: &ObjectKey) -> String {
    format!("{kind}/{}/{}", route.namespace, route.name)
}
