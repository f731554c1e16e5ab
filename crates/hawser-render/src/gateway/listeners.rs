//! An owned Gateway's listeners: protocol, port, hostname, TLS certificates,
//! allowed route kinds and conflicts, each with the conditions the spec
//! defines. Listeners that pass become [`ListenerEntry`]s routes attach to.

use std::collections::BTreeMap;

use hawser_model::{
    GATEWAY_API_GROUP, Gateway, Kind, Listener, ObjectKey, RouteGroupKind, Store, TlsMode,
};

use super::grants::{self, CrossReference};
use super::status::Condition;
use super::table::{ListenerEntry, ListenerProtocol, ListenerTlsEntry};
use crate::validate;

/// A listener as attachment and status see it.
#[derive(Debug)]
pub(super) struct ListenerState<'a> {
    pub listener: &'a Listener,
    /// Set when the listener is accepted, resolved and not conflicted:
    /// routes attach only to these.
    pub entry: Option<ListenerEntry>,
    pub supported_kinds: Vec<RouteGroupKind>,
    pub attached_routes: u32,
    /// Hostnames HTTPRoutes and GRPCRoutes serve here: one kind may not take
    /// a hostname the other already serves.
    pub web_hosts: Vec<(Kind, Option<String>)>,
    pub accepted: Condition,
    pub resolved_refs: Condition,
    pub conflicted: Condition,
    /// Secrets the entry terminates TLS with.
    pub certificates: Vec<ObjectKey>,
}

impl ListenerState<'_> {
    pub fn conditions(&self, generation: Option<i64>) -> Vec<Condition> {
        let programmed = match &self.entry {
            Some(_) => Condition::new("Programmed", true, "Programmed", "", generation),
            None => Condition::new(
                "Programmed",
                false,
                "Invalid",
                "the listener is not accepted, has unresolved references or conflicts",
                generation,
            ),
        };
        vec![
            self.accepted.clone(),
            self.resolved_refs.clone(),
            self.conflicted.clone(),
            programmed,
        ]
    }
}

/// The route kinds a protocol can carry.
pub(super) fn kinds_for(protocol: ListenerProtocol) -> &'static [Kind] {
    match protocol {
        ListenerProtocol::Http | ListenerProtocol::Https => &[Kind::HttpRoute, Kind::GrpcRoute],
        ListenerProtocol::Tls => &[Kind::TlsRoute],
        ListenerProtocol::Tcp => &[Kind::TcpRoute],
    }
}

fn group_kind(kind: Kind) -> RouteGroupKind {
    RouteGroupKind {
        group: GATEWAY_API_GROUP.to_string(),
        kind: kind.as_str().to_string(),
    }
}

/// Checks every listener of a Gateway, then marks conflicts between them.
pub(super) fn listener_states<'a>(store: &Store, gateway: &'a Gateway) -> Vec<ListenerState<'a>> {
    let generation = gateway.generation;
    let mut states: Vec<ListenerState<'a>> = gateway
        .listeners
        .iter()
        .map(|l| listener_state(store, gateway, l))
        .collect();
    mark_conflicts(&mut states, generation);
    states
}

fn listener_state<'a>(store: &Store, gateway: &Gateway, l: &'a Listener) -> ListenerState<'a> {
    let generation = gateway.generation;
    let mut state = ListenerState {
        listener: l,
        entry: None,
        supported_kinds: Vec::new(),
        attached_routes: 0,
        web_hosts: Vec::new(),
        accepted: Condition::new("Accepted", true, "Accepted", "", generation),
        resolved_refs: Condition::new("ResolvedRefs", true, "ResolvedRefs", "", generation),
        conflicted: Condition::new("Conflicted", false, "NoConflicts", "", generation),
        certificates: Vec::new(),
    };
    let refuse =
        |reason, message: String| Condition::new("Accepted", false, reason, message, generation);
    let Some(protocol) = ListenerProtocol::parse(&l.protocol) else {
        state.accepted = refuse(
            "UnsupportedProtocol",
            format!("protocol {:?} is not HTTP, HTTPS, TLS or TCP", l.protocol),
        );
        return state;
    };
    state.supported_kinds = allowed_kinds(l, protocol, &mut state.resolved_refs, generation);
    let port = match validate::port("port", l.port) {
        Ok(port) => port,
        Err(message) => {
            state.accepted = refuse("PortUnavailable", message.into());
            return state;
        }
    };
    let checked = validate::subdomain_name("listener name", &l.name)
        .and_then(|()| l.hostname.as_deref().map_or(Ok(()), validate::host));
    if let Err(message) = checked {
        state.accepted = refuse("UnsupportedValue", message.into());
        return state;
    }
    let tls_mode = match (protocol, l.tls.as_ref().map(|t| t.mode)) {
        (ListenerProtocol::Https, Some(TlsMode::Terminate)) => Some(TlsMode::Terminate),
        (ListenerProtocol::Tls, Some(TlsMode::Passthrough) | None) => Some(TlsMode::Passthrough),
        (ListenerProtocol::Http | ListenerProtocol::Tcp, None) => None,
        (_, mode) => {
            let mode = mode.map_or("none".to_string(), |m| format!("{m:?}"));
            state.accepted = refuse(
                "UnsupportedValue",
                format!(
                    "protocol {} with TLS mode {mode} is not supported",
                    l.protocol
                ),
            );
            return state;
        }
    };
    if tls_mode == Some(TlsMode::Terminate) {
        match certificates(store, gateway, l) {
            Ok(secrets) => state.certificates = secrets,
            Err((reason, message)) => {
                state.resolved_refs =
                    Condition::new("ResolvedRefs", false, reason, message, generation);
            }
        }
    }
    if state.resolved_refs.is_true() {
        let mut entry = ListenerEntry::new(&l.name, port, protocol);
        entry.hostname = l.hostname.clone();
        entry.tls = tls_mode.map(|mode| ListenerTlsEntry {
            mode,
            certificates: state.certificates.clone(),
        });
        state.entry = Some(entry);
    }
    state
}

/// `allowedRoutes.kinds` narrowed to what the protocol carries; a kind it
/// cannot carry makes `ResolvedRefs` False (InvalidRouteKinds).
fn allowed_kinds(
    l: &Listener,
    protocol: ListenerProtocol,
    resolved_refs: &mut Condition,
    generation: Option<i64>,
) -> Vec<RouteGroupKind> {
    let supported: Vec<RouteGroupKind> =
        kinds_for(protocol).iter().map(|k| group_kind(*k)).collect();
    if l.allowed_routes.kinds.is_empty() {
        return supported;
    }
    let (ok, bad): (Vec<_>, Vec<_>) = l
        .allowed_routes
        .kinds
        .iter()
        .cloned()
        .partition(|k| supported.contains(k));
    if let Some(bad) = bad.first() {
        *resolved_refs = Condition::new(
            "ResolvedRefs",
            false,
            "InvalidRouteKinds",
            format!(
                "{}/{} is not a route kind {} listeners carry",
                bad.group, bad.kind, l.protocol
            ),
            generation,
        );
    }
    ok
}

/// The listener's certificate Secrets, or why they do not resolve.
fn certificates(
    store: &Store,
    gateway: &Gateway,
    l: &Listener,
) -> Result<Vec<ObjectKey>, (&'static str, String)> {
    let refs = l
        .tls
        .as_ref()
        .map(|t| t.certificate_refs.as_slice())
        .unwrap_or_default();
    if refs.is_empty() {
        return Err((
            "InvalidCertificateRef",
            "an HTTPS listener needs certificateRefs".to_string(),
        ));
    }
    let mut secrets = Vec::new();
    for c in refs {
        if !(c.group.is_empty() || c.group == "core") || c.kind != "Secret" {
            return Err((
                "InvalidCertificateRef",
                format!(
                    "certificateRef {:?} is a {}/{}, not a core Secret",
                    c.name, c.group, c.kind
                ),
            ));
        }
        let namespace = c.namespace.as_deref().unwrap_or(&gateway.key.namespace);
        let reference = CrossReference {
            from_kind: Kind::Gateway,
            from_namespace: &gateway.key.namespace,
            to_kind: "Secret",
            to_namespace: namespace,
            to_name: &c.name,
        };
        if !grants::permitted(store, &reference) {
            return Err((
                "RefNotPermitted",
                format!(
                    "no ReferenceGrant in namespace {namespace:?} lets Gateways from {:?} use Secret {:?}",
                    gateway.key.namespace, c.name
                ),
            ));
        }
        let key = ObjectKey::new(namespace, &c.name);
        validate::label_name("certificateRef namespace", namespace)
            .and_then(|()| validate::subdomain_name("certificateRef name", &c.name))
            .map_err(|m| ("InvalidCertificateRef", m.into()))?;
        match store.secret(&key) {
            Some(s) if s.tls_crt.is_some() && s.tls_key.is_some() => secrets.push(key),
            Some(_) => {
                return Err((
                    "InvalidCertificateRef",
                    format!("Secret {key} has no tls.crt and tls.key"),
                ));
            }
            None => {
                return Err((
                    "InvalidCertificateRef",
                    format!("Secret {key} does not exist"),
                ));
            }
        }
    }
    Ok(secrets)
}

/// Listeners on one port must share a protocol (or be HTTPS and TLS), and
/// then differ in hostname.
fn mark_conflicts(states: &mut [ListenerState<'_>], generation: Option<i64>) {
    let mut by_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, state) in states.iter().enumerate() {
        if let Some(entry) = &state.entry {
            by_port.entry(entry.port).or_default().push(i);
        }
    }
    for (port, indexes) in by_port {
        let protocol = |i: usize| states[i].entry.as_ref().map(|e| e.protocol);
        let first = protocol(indexes[0]);
        // HTTPS and TLS passthrough can share a port: SNI tells them apart.
        let sni = |p: Option<ListenerProtocol>| {
            matches!(p, Some(ListenerProtocol::Https | ListenerProtocol::Tls))
        };
        let mixed = indexes
            .iter()
            .any(|&i| protocol(i) != first && !(sni(protocol(i)) && sni(first)));
        let mut conflicts: Vec<(usize, &'static str, String)> = Vec::new();
        if mixed {
            for &i in &indexes {
                conflicts.push((
                    i,
                    "ProtocolConflict",
                    format!("listeners on port {port} use different protocols"),
                ));
            }
        } else {
            for &i in &indexes {
                let host = &states[i].listener.hostname;
                let shared = indexes
                    .iter()
                    .any(|&j| j != i && &states[j].listener.hostname == host);
                if shared {
                    let host = host.as_deref().unwrap_or("any host");
                    conflicts.push((
                        i,
                        "HostnameConflict",
                        format!("another listener on port {port} serves {host}"),
                    ));
                }
            }
        }
        // No conflicting listener wins: none of them is accepted.
        for (i, reason, message) in conflicts {
            states[i].conflicted =
                Condition::new("Conflicted", true, reason, message.clone(), generation);
            states[i].accepted = Condition::new("Accepted", false, reason, message, generation);
            states[i].entry = None;
        }
    }
}
