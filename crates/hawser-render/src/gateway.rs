//! The Rust half of Gateway API support: which GatewayClasses and Gateways
//! are ours, which routes attach to their listeners, the routing table that
//! makes, and the status the spec asks for.
//!
//! ```text
//!  GatewayClasses ──controllerName──► owned classes ──► owned Gateways ──► listeners
//!                                                                           (protocol, TLS,
//!  HTTPRoute / GRPCRoute / TLSRoute / TCPRoute                               allowedRoutes,
//!     │ checked once (names, matches, filters,                               conflicts)
//!     │ backendRefs + ReferenceGrants)                                          │
//!     └──────► parentRefs ──attach (sectionName, port, kinds, namespaces,──────►┘
//!                                   hostname intersection)
//!                 │                                     │
//!                 ▼                                     ▼
//!          GatewayTable (rules in precedence order,  GatewayStatus (conditions,
//!          backends used, certificates)              attachedRoutes, supportedKinds)
//! ```
//!
//! Nothing here does I/O. One bad object never stops the others: a bad
//! rule is dropped (the route is `PartiallyInvalid`), a bad route or listener
//! is left out with a [`Diagnostic`] naming it and the status saying why.

mod attach;
mod backend_refs;
mod compiled;
mod filters;
mod grants;
mod grpc;
mod hostname;
mod http;
mod listeners;
mod precedence;
mod status;
mod stream;
mod table;

use std::collections::{BTreeMap, BTreeSet};

use hawser_model::{Gateway, GrpcRoute, HttpRoute, Kind, ObjectKey, ObjectRef, RouteMeta, Store};

use self::compiled::Compiled;
pub(crate) use self::hostname::{HostRank, rank as host_rank};
use self::listeners::ListenerState;
pub use self::status::{
    ClassStatus, Condition, ConditionStatus, GatewayObjectStatus, GatewayStatus, ListenerStatus,
    RouteParentStatus, RouteStatus, condition,
};
pub use self::table::{
    BackendTarget, FilterEntry, GatewayEntry, GatewayTable, GrpcRuleEntry, HttpRuleEntry,
    ListenerEntry, ListenerProtocol, ListenerTlsEntry, MirrorEntry, TcpRouteEntry, TlsRouteEntry,
    WeightedBackend,
};
use crate::report::{Diagnostic, Diagnostics, Severity};
use crate::validate;

/// The `controllerName` of the GatewayClasses hawser implements.
pub const GATEWAY_CONTROLLER: &str = "hawser.dev/gateway-controller";

/// The routing table, the status and what was wrong, for one store.
#[derive(Debug, Clone)]
pub struct GatewayRouting {
    pub table: GatewayTable,
    pub status: GatewayStatus,
    /// Rejected, ignored and warned-about objects, sorted.
    pub diagnostics: Vec<Diagnostic>,
}

/// Computes the Gateway API routing table and status for the GatewayClasses
/// whose `controllerName` is `controller`.
pub fn gateway_routing(store: &Store, controller: &str) -> GatewayRouting {
    let mut diags = Diagnostics::default();
    let (table, status) = gateway_table(store, controller, &mut diags);
    GatewayRouting {
        table,
        status,
        diagnostics: diags.finish(),
    }
}

/// An owned Gateway while routes attach to it.
struct OwnedGateway<'a> {
    gateway: &'a Gateway,
    /// Set when the Gateway's own name cannot be used.
    invalid: Option<String>,
    listeners: Vec<ListenerState<'a>>,
}

struct Context<'a> {
    store: &'a Store,
    controller: &'a str,
    gateways: Vec<OwnedGateway<'a>>,
    index: BTreeMap<ObjectKey, usize>,
    table: GatewayTable,
    status: GatewayStatus,
    /// Route creation times, for precedence.
    created: BTreeMap<ObjectRef, Option<String>>,
}

pub(crate) fn gateway_table(
    store: &Store,
    controller: &str,
    diags: &mut Diagnostics,
) -> (GatewayTable, GatewayStatus) {
    let mut ctx = Context {
        store,
        controller,
        gateways: Vec::new(),
        index: BTreeMap::new(),
        table: GatewayTable::default(),
        status: GatewayStatus::default(),
        created: BTreeMap::new(),
    };
    for class in store.gateway_classes() {
        if class.controller_name == controller {
            ctx.status.classes.push(ClassStatus {
                name: class.name.clone(),
                conditions: vec![Condition::new(
                    "Accepted",
                    true,
                    "Accepted",
                    "",
                    class.generation,
                )],
            });
        }
    }
    for gateway in store.gateways() {
        let object = ObjectRef::new(Kind::Gateway, gateway.key.clone());
        let owned = store
            .gateway_class(&gateway.class_name)
            .is_some_and(|c| c.controller_name == controller);
        if !owned {
            let why = format!(
                "GatewayClass {:?} is not one with controller {controller:?}",
                gateway.class_name
            );
            diags.push(Severity::Ignored, &object, why);
            continue;
        }
        let invalid = validate::label_name("namespace", &gateway.key.namespace)
            .and_then(|()| validate::subdomain_name("name", &gateway.key.name))
            .err()
            .map(String::from);
        let listeners = match &invalid {
            Some(reason) => {
                diags.reject(&object, reason.clone());
                Vec::new()
            }
            None => listeners::listener_states(store, gateway),
        };
        // A bad listener leaves the others serving: a warning, not a rejection.
        for state in &listeners {
            for condition in [&state.accepted, &state.resolved_refs] {
                if !condition.is_true() {
                    let message =
                        format!("listener {:?}: {}", state.listener.name, condition.message);
                    diags.warn(&object, message);
                }
            }
            if state.conflicted.is_true() {
                let message = format!(
                    "listener {:?}: {}",
                    state.listener.name, state.conflicted.message
                );
                diags.warn(&object, message);
            }
        }
        ctx.index.insert(gateway.key.clone(), ctx.gateways.len());
        ctx.gateways.push(OwnedGateway {
            gateway,
            invalid,
            listeners,
        });
    }

    // Oldest first across both kinds: when an HTTPRoute and a GRPCRoute
    // claim a hostname on one listener, the older one keeps it.
    let mut web: Vec<WebRoute<'_>> = store
        .http_routes()
        .map(WebRoute::Http)
        .chain(store.grpc_routes().map(WebRoute::Grpc))
        .collect();
    web.sort_by_cached_key(|r| {
        let meta = r.meta();
        (
            meta.created.is_none(),
            meta.created.clone(),
            meta.key.clone(),
            r.kind(),
        )
    });
    for route in web {
        match route {
            WebRoute::Http(route) => {
                let compiled = http::compile(store, route);
                let meta = &route.meta;
                attach_route(
                    &mut ctx,
                    diags,
                    Kind::HttpRoute,
                    meta,
                    &compiled,
                    |entry, hosts| {
                        for host in hosts {
                            for rule in &compiled.rules {
                                entry.http_rules.extend(rule.entries(route, host));
                            }
                        }
                    },
                );
            }
            WebRoute::Grpc(route) => {
                let compiled = grpc::compile(store, route);
                let meta = &route.meta;
                attach_route(
                    &mut ctx,
                    diags,
                    Kind::GrpcRoute,
                    meta,
                    &compiled,
                    |entry, hosts| {
                        for host in hosts {
                            for rule in &compiled.rules {
                                entry.grpc_rules.extend(rule.entries(route, host));
                            }
                        }
                    },
                );
            }
        }
    }
    for route in store.tls_routes() {
        let compiled = stream::compile(store, Kind::TlsRoute, &route.meta, &route.rules);
        let (backends, unavailable) = stream::merged(&compiled.rules);
        attach_route(
            &mut ctx,
            diags,
            Kind::TlsRoute,
            &route.meta,
            &compiled,
            |entry, hosts| {
                for host in hosts {
                    entry.tls_routes.push(TlsRouteEntry {
                        route: route.meta.key.clone(),
                        hostname: host.clone(),
                        backends: backends.clone(),
                        unavailable,
                    });
                }
            },
        );
    }
    for route in store.tcp_routes() {
        let compiled = stream::compile(store, Kind::TcpRoute, &route.meta, &route.rules);
        let (backends, unavailable) = stream::merged(&compiled.rules);
        attach_route(
            &mut ctx,
            diags,
            Kind::TcpRoute,
            &route.meta,
            &compiled,
            |entry, _| {
                entry.tcp_routes.push(TcpRouteEntry {
                    route: route.meta.key.clone(),
                    backends: backends.clone(),
                    unavailable,
                });
            },
        );
    }
    finish(ctx)
}

/// The route kinds that share HTTP listeners.
enum WebRoute<'a> {
    Http(&'a HttpRoute),
    Grpc(&'a GrpcRoute),
}

impl WebRoute<'_> {
    fn meta(&self) -> &RouteMeta {
        match self {
            WebRoute::Http(r) => &r.meta,
            WebRoute::Grpc(r) => &r.meta,
        }
    }

    fn kind(&self) -> Kind {
        match self {
            WebRoute::Http(_) => Kind::HttpRoute,
            WebRoute::Grpc(_) => Kind::GrpcRoute,
        }
    }
}

/// Leaves out the listeners where a route of the other web kind already
/// serves one of these hostnames; refuses the parent if none is left.
fn without_clashes(
    kind: Kind,
    attachment: attach::Attachment,
    listeners: &[ListenerState<'_>],
) -> Result<attach::Attachment, (&'static str, String)> {
    if !matches!(kind, Kind::HttpRoute | Kind::GrpcRoute) {
        return Ok(attachment);
    }
    let clashes = |l: usize, hosts: &[Option<String>]| {
        listeners[l].web_hosts.iter().any(|(other, served)| {
            *other != kind
                && hosts
                    .iter()
                    .any(|h| hostname::overlap(h.as_deref(), served.as_deref()))
        })
    };
    let kept: attach::Attachment = attachment
        .into_iter()
        .filter(|(l, hosts)| !clashes(*l, hosts))
        .collect();
    if kept.is_empty() {
        let other = if kind == Kind::HttpRoute {
            Kind::GrpcRoute
        } else {
            Kind::HttpRoute
        };
        return Err((
            "NotAllowedByListeners",
            format!("an older {other} serves these hostnames on the listener"),
        ));
    }
    Ok(kept)
}

/// Attaches one route to every owned Gateway its parentRefs name, placing
/// its entries on each listener it lands on, and records its status.
fn attach_route<R>(
    ctx: &mut Context<'_>,
    diags: &mut Diagnostics,
    kind: Kind,
    meta: &RouteMeta,
    compiled: &Compiled<R>,
    mut place: impl FnMut(&mut ListenerEntry, &[Option<String>]),
) {
    let object = ObjectRef::new(kind, meta.key.clone());
    let generation = meta.generation;
    let mut parents = Vec::new();
    let mut attached = false;
    let mut seen: BTreeSet<(usize, usize)> = BTreeSet::new();
    for parent in &meta.parent_refs {
        if !parent.is_gateway() {
            continue;
        }
        let gateway_key = parent.key(&meta.key.namespace);
        let Some(&g) = ctx.index.get(&gateway_key) else {
            continue; // not a Gateway of ours: another controller reports it
        };
        let owned = &mut ctx.gateways[g];
        let outcome = match (compiled.accepted(), &owned.invalid) {
            (Err(reason), _) => Err(("UnsupportedValue", reason)),
            (Ok(()), Some(reason)) => Err((
                "NoMatchingParent",
                format!("the Gateway is invalid: {reason}"),
            )),
            (Ok(()), None) => attach::attach(
                ctx.store,
                kind,
                meta,
                parent,
                owned.gateway,
                &owned.listeners,
            )
            .map_err(|refusal| (refusal.reason, refusal.message))
            .and_then(|attachment| without_clashes(kind, attachment, &owned.listeners)),
        };
        let accepted = match outcome {
            Ok(attachment) => {
                for (l, hosts) in attachment {
                    if seen.insert((g, l)) {
                        let state = &mut owned.listeners[l];
                        state.attached_routes += 1;
                        if matches!(kind, Kind::HttpRoute | Kind::GrpcRoute) {
                            state
                                .web_hosts
                                .extend(hosts.iter().map(|h| (kind, h.clone())));
                        }
                        if let Some(entry) = state.entry.as_mut() {
                            place(entry, &hosts);
                        }
                    }
                }
                attached = true;
                Condition::new("Accepted", true, "Accepted", "", generation)
            }
            Err((reason, message)) => {
                diags.warn(
                    &object,
                    format!("not attached to Gateway {gateway_key}: {message}"),
                );
                Condition::new("Accepted", false, reason, message, generation)
            }
        };
        let resolved = match &compiled.unresolved {
            None => Condition::new("ResolvedRefs", true, "ResolvedRefs", "", generation),
            Some(u) => Condition::new(
                "ResolvedRefs",
                false,
                u.reason,
                u.message.clone(),
                generation,
            ),
        };
        let mut conditions = vec![accepted.clone(), resolved];
        if accepted.is_true() && !compiled.rejected.is_empty() {
            conditions.push(Condition::new(
                "PartiallyInvalid",
                true,
                "UnsupportedValue",
                compiled.rejected.join("; "),
                generation,
            ));
        }
        parents.push(RouteParentStatus {
            parent_ref: parent.clone(),
            controller_name: ctx.controller.to_string(),
            conditions,
        });
    }
    if parents.is_empty() {
        return;
    }
    if let Some(reason) = &compiled.route_error {
        diags.reject(&object, reason.clone());
    } else if compiled.rules.is_empty() {
        diags.reject(&object, compiled.rejected.join("; "));
    } else {
        for reason in &compiled.rejected {
            diags.warn(&object, format!("{reason}; the rule is dropped"));
        }
    }
    if let Some(u) = &compiled.unresolved {
        diags.warn(&object, format!("{}; {}", u.message, u.effect));
    }
    if attached {
        for backend in &compiled.backends {
            ctx.table
                .backends
                .entry(backend.clone())
                .or_insert_with(|| object.clone());
        }
    }
    ctx.created.insert(object.clone(), meta.created.clone());
    ctx.status.routes.push(RouteStatus {
        route: object,
        parents,
    });
}

/// Sorts every listener's rules, then writes the Gateway entries and statuses.
fn finish(ctx: Context<'_>) -> (GatewayTable, GatewayStatus) {
    let Context {
        gateways,
        mut table,
        mut status,
        created,
        ..
    } = ctx;
    let created_of = |kind: Kind, key: &ObjectKey| {
        created
            .get(&ObjectRef::new(kind, key.clone()))
            .cloned()
            .flatten()
    };
    for owned in gateways {
        let gateway = owned.gateway;
        let generation = gateway.generation;
        let gateway_ref = ObjectRef::new(Kind::Gateway, gateway.key.clone());
        let mut listener_statuses = Vec::new();
        let mut entries = Vec::new();
        for state in owned.listeners {
            listener_statuses.push(ListenerStatus {
                name: state.listener.name.clone(),
                attached_routes: state.attached_routes,
                supported_kinds: state.supported_kinds.clone(),
                conditions: state.conditions(generation),
            });
            let Some(mut entry) = state.entry else {
                continue;
            };
            entry.http_rules.sort_by_cached_key(|e| {
                precedence::http(e, created_of(Kind::HttpRoute, &e.route).as_deref())
            });
            entry.grpc_rules.sort_by_cached_key(|e| {
                precedence::grpc(e, created_of(Kind::GrpcRoute, &e.route).as_deref())
            });
            entry.tls_routes.sort_by_cached_key(|e| {
                precedence::tls(e, created_of(Kind::TlsRoute, &e.route).as_deref())
            });
            entry.tcp_routes.sort_by_cached_key(|e| {
                precedence::tcp(e, created_of(Kind::TcpRoute, &e.route).as_deref())
            });
            for secret in entry.tls.iter().flat_map(|t| &t.certificates) {
                table
                    .certificates
                    .entry(secret.clone())
                    .or_default()
                    .insert(gateway_ref.clone());
            }
            entries.push(entry);
        }
        let (listeners_accepted, programmed_condition) =
            status::listener_summary(&listener_statuses, generation);
        let accepted = match &owned.invalid {
            Some(reason) => {
                Condition::new("Accepted", false, "Invalid", reason.clone(), generation)
            }
            None => listeners_accepted,
        };
        status.gateways.push(GatewayObjectStatus {
            gateway: gateway.key.clone(),
            conditions: vec![accepted, programmed_condition],
            listeners: listener_statuses,
        });
        table.gateways.push(GatewayEntry {
            gateway: gateway.key.clone(),
            class_name: gateway.class_name.clone(),
            listeners: entries,
        });
    }
    status.routes.sort_by(|a, b| a.route.cmp(&b.route));
    (table, status)
}

#[cfg(test)]
mod tests;
