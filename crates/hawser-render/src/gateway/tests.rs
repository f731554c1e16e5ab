//! Tests of the Gateway API table and status, one concern per file, over
//! stores built with the helpers here.

mod attachment;
mod backends;
mod grants;
mod hostnames;
mod precedence;
mod regexes;
mod status;

use std::collections::BTreeMap;

use hawser_model::{
    AllowedRoutes, BackendRef, CertificateRef, Gateway, GatewayClass, HttpBackendRef, HttpRoute,
    HttpRouteMatch, HttpRouteRule, HttpTimeouts, Kind, Listener, ListenerTls, Object, ObjectKey,
    ObjectRef, ParentRef, PathMatch, PathMatchKind, RouteMeta, RouteNamespaces, Secret, Service,
    ServicePort, ServiceType, Store, TlsMode,
};

use super::*;

const GROUP: &str = hawser_model::GATEWAY_API_GROUP;

fn key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(namespace, name)
}

/// Our `hawser` GatewayClass.
fn class() -> Object {
    Object::GatewayClass(GatewayClass {
        name: "hawser".to_string(),
        controller_name: GATEWAY_CONTROLLER.to_string(),
        generation: Some(1),
    })
}

/// A listener admitting routes from all namespaces (the routes here live in
/// `app`, the Gateway in `infra`).
fn listener(name: &str, port: i32, protocol: &str) -> Listener {
    Listener {
        name: name.to_string(),
        port,
        protocol: protocol.to_string(),
        hostname: None,
        tls: None,
        allowed_routes: AllowedRoutes {
            namespaces: RouteNamespaces::All,
            kinds: Vec::new(),
        },
    }
}

fn with_hostname(mut l: Listener, hostname: &str) -> Listener {
    l.hostname = Some(hostname.to_string());
    l
}

fn https_listener(name: &str, secret: &str, namespace: Option<&str>) -> Listener {
    let mut l = listener(name, 443, "HTTPS");
    l.tls = Some(ListenerTls {
        mode: TlsMode::Terminate,
        certificate_refs: vec![CertificateRef {
            group: String::new(),
            kind: "Secret".to_string(),
            name: secret.to_string(),
            namespace: namespace.map(str::to_string),
        }],
    });
    l
}

/// Gateway `infra/gw` of class `hawser`.
fn gateway(listeners: Vec<Listener>) -> Object {
    Object::Gateway(Gateway {
        key: key("infra", "gw"),
        generation: Some(2),
        created: None,
        class_name: "hawser".to_string(),
        listeners,
        addresses: Vec::new(),
    })
}

fn parent() -> ParentRef {
    ParentRef {
        group: GROUP.to_string(),
        kind: "Gateway".to_string(),
        namespace: Some("infra".to_string()),
        name: "gw".to_string(),
        section_name: None,
        port: None,
    }
}

fn meta(namespace: &str, name: &str, hostnames: &[&str]) -> RouteMeta {
    RouteMeta {
        key: key(namespace, name),
        generation: Some(5),
        created: None,
        parent_refs: vec![parent()],
        hostnames: hostnames.iter().map(|h| h.to_string()).collect(),
    }
}

fn backend(namespace: Option<&str>, name: &str, weight: i32) -> BackendRef {
    BackendRef {
        group: String::new(),
        kind: "Service".to_string(),
        name: name.to_string(),
        namespace: namespace.map(str::to_string),
        port: Some(80),
        weight,
    }
}

fn http_match(kind: PathMatchKind, path: &str) -> HttpRouteMatch {
    HttpRouteMatch {
        path: PathMatch {
            kind,
            value: path.to_string(),
        },
        ..HttpRouteMatch::default()
    }
}

fn rule(matches: Vec<HttpRouteMatch>, backends: Vec<BackendRef>) -> HttpRouteRule {
    HttpRouteRule {
        name: None,
        matches,
        filters: Vec::new(),
        backend_refs: backends
            .into_iter()
            .map(|backend| HttpBackendRef {
                backend,
                filters: Vec::new(),
            })
            .collect(),
        timeouts: HttpTimeouts::default(),
    }
}

/// An HTTPRoute in `app` attached to `infra/gw`, one rule per match, each to Service `web`.
fn http_route(name: &str, matches: Vec<HttpRouteMatch>) -> Object {
    let rules = matches
        .into_iter()
        .map(|m| rule(vec![m], vec![backend(None, "web", 1)]))
        .collect();
    Object::HttpRoute(HttpRoute {
        meta: meta("app", name, &[]),
        rules,
    })
}

fn service(namespace: &str, name: &str) -> Object {
    Object::Service(Service {
        key: key(namespace, name),
        annotations: BTreeMap::new(),
        service_type: ServiceType::Endpoints,
        ports: vec![ServicePort {
            name: "http".to_string(),
            port: 80,
            target_port: None,
            protocol: "TCP".to_string(),
        }],
    })
}

fn tls_secret(namespace: &str, name: &str) -> Object {
    Object::Secret(Secret {
        key: key(namespace, name),
        secret_type: "kubernetes.io/tls".to_string(),
        tls_crt: Some(b"crt".to_vec()),
        tls_key: Some(b"key".to_vec()),
        auth: None,
        ca_crt: None,
        entries: Default::default(),
    })
}

/// A store with our class, Services `app/web` and `app/api`, and these objects.
fn store(objects: impl IntoIterator<Item = Object>) -> Store {
    let mut store = Store::new();
    for object in [class(), service("app", "web"), service("app", "api")]
        .into_iter()
        .chain(objects)
    {
        store.insert(object);
    }
    store
}

fn routing(store: &Store) -> GatewayRouting {
    gateway_routing(store, GATEWAY_CONTROLLER)
}

fn listener_entry<'a>(routing: &'a GatewayRouting, name: &str) -> &'a ListenerEntry {
    routing.table.gateways[0]
        .listeners
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("listener {name} is not programmed: {:#?}", routing.status))
}

fn listener_status<'a>(routing: &'a GatewayRouting, name: &str) -> &'a ListenerStatus {
    routing.status.gateways[0]
        .listeners
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no status for listener {name}"))
}

/// The conditions of a route's `n`th parent status.
fn parent_conditions(routing: &GatewayRouting, kind: Kind, name: &str, n: usize) -> Vec<Condition> {
    let route = ObjectRef::new(kind, key("app", name));
    routing
        .status
        .routes
        .iter()
        .find(|r| r.route == route)
        .unwrap_or_else(|| panic!("no status for {route}: {:#?}", routing.status))
        .parents[n]
        .conditions
        .clone()
}

/// `(status, reason)` of a condition, `("absent", "")` when missing.
fn state(conditions: &[Condition], condition_type: &str) -> (&'static str, &'static str) {
    match condition(conditions, condition_type) {
        Some(c) if c.is_true() => ("True", c.reason),
        Some(c) => ("False", c.reason),
        None => ("absent", ""),
    }
}
