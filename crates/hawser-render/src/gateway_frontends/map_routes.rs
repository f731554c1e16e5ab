//! Maps first: the HTTPRoute rules that only say "this host and path go to
//! that backend" are served from one map, like Ingress routes, so adding,
//! changing or removing them changes a map at runtime instead of
//! haproxy.cfg. Every other rule stays an ACL rule in the frontend.
//!
//! ```text
//!  rule in precedence order ──simple?──► map entry  <scope>@<host><path>|  →  <rank>:<backend>;<route>
//!                             └─────────► ACL rule   (txn.gw_rule, txn.gw_rank = <rank>)
//! ```
//!
//! A rule is simple when its hostname is exact or absent, its path is Exact
//! or PathPrefix, it matches nothing else (method, headers, query), has no
//! filters, no timeouts and one backend that takes every request.
//!
//! At request time the frontend looks the request up with its exact host,
//! then without one; keys are longest first, so the hit is the best simple
//! rule by the spec's precedence (hostname, then an Exact path, then the
//! longest prefix). Each rule carries its **rank**, a number that orders as
//! the spec's precedence does up to the age and name tie-breakers: the map
//! hit wins over the ACL rule the frontend chose unless that rule's rank is
//! lower. A simple rule that ties an ACL rule's rank on the same hostname
//! would need the tie-breakers, so it stays an ACL rule.
//!
//! The **scope** keeps listeners apart: `<frontend>.http` or
//! `<frontend>.https`, from whether the request came over TLS.

use std::collections::{BTreeMap, BTreeSet};

use hawser_model::PathMatchKind;

use crate::gateway::{BackendTarget, HttpRuleEntry, ListenerProtocol, host_rank};
use crate::route_key::ROUTE_KEY_END;
/// The Gateway API routing map, beside the Ingress one.
pub(crate) use hawser_plan::GATEWAY_MAP_PATH;
use hawser_plan::{MapEntry, MapPlan};

/// Ends a scope in a key; no scope or hostname holds it.
const SCOPE_END: char = '@';

/// The scope of a listener's rules in `frontend`.
pub(crate) fn scope(frontend: &str, protocol: ListenerProtocol) -> String {
    let transport = if protocol == ListenerProtocol::Https {
        "https"
    } else {
        "http"
    };
    format!("{frontend}.{transport}")
}

/// A number that orders rules as the spec's precedence does, before the
/// age and name tie-breakers: lower goes first. Decimal fields, most
/// significant first: host class, host length, path class, path length,
/// method, header count, query count.
pub(crate) fn rank(entry: &HttpRuleEntry) -> u64 {
    let (host_class, host_len) = host_rank(entry.hostname.as_deref());
    let path_class = match entry.path.kind {
        PathMatchKind::Exact => 0,
        PathMatchKind::PathPrefix => 1,
        PathMatchKind::RegularExpression => 2,
    };
    let fields: [(usize, u64); 7] = [
        (1, u64::from(host_class)),
        (3, 999 - host_len.0.min(999) as u64),
        (1, path_class),
        (5, 99_999 - entry.path.value.len().min(99_999) as u64),
        (1, u64::from(entry.method.is_none())),
        (2, 99 - entry.headers.len().min(99) as u64),
        (2, 99 - entry.query_params.len().min(99) as u64),
    ];
    fields.iter().fold(0, |acc, (digits, value)| {
        acc * 10u64.pow(*digits as u32) + value
    })
}

/// GRPCRoute rules follow a listener's HTTPRoute rules: they rank after
/// every HTTPRoute rule (whose ranks have 15 digits, the first at most 2).
pub(crate) const GRPC_RANK: u64 = 1_000_000_000_000_000;

/// The backend of a rule the map can serve, or `None`.
pub(crate) fn simple_backend(entry: &HttpRuleEntry) -> Option<&str> {
    let plain = !entry.unavailable
        && entry
            .hostname
            .as_deref()
            .is_none_or(|h| !h.starts_with('*'))
        && entry.path.kind != PathMatchKind::RegularExpression
        && entry.method.is_none()
        && entry.headers.is_empty()
        && entry.query_params.is_empty()
        && entry.filters.is_empty()
        && entry.timeouts.request_ms.is_none()
        && entry.timeouts.backend_request_ms.is_none();
    if !plain {
        return None;
    }
    let mut live = entry.backends.iter().filter(|b| b.weight > 0);
    match (live.next(), live.next()) {
        (Some(only), None) if only.filters.is_empty() => match &only.target {
            BackendTarget::Service { backend, .. } => Some(backend),
            BackendTarget::Unresolved { .. } => None,
        },
        _ => None,
    }
}

/// The map's entries, gathered rule by rule in precedence order.
#[derive(Debug, Default)]
pub(crate) struct GatewayMap {
    /// key → `<rank>:<backend>`; the first rule to claim a key keeps it.
    entries: BTreeMap<String, String>,
    /// The (scope, rank, hostname) of every ACL rule, for ties.
    acl: BTreeSet<(String, u64, Option<String>)>,
}

impl GatewayMap {
    /// Notes an ACL rule, which a simple rule must not tie.
    pub(crate) fn note_acl(&mut self, scope: &str, rank: u64, hostname: Option<&str>) {
        self.acl
            .insert((scope.to_string(), rank, hostname.map(str::to_string)));
    }

    /// Whether a simple rule would tie an ACL rule noted before.
    pub(crate) fn ties(&self, scope: &str, rank: u64, hostname: Option<&str>) -> bool {
        self.acl
            .contains(&(scope.to_string(), rank, hostname.map(str::to_string)))
    }

    /// Adds a simple rule's keys: an Exact path is its own key; a prefix is
    /// its own text (it matches itself) and, with `/` appended, every path
    /// below it.
    pub(crate) fn add(&mut self, scope: &str, entry: &HttpRuleEntry, backend: &str) {
        let host = entry.hostname.as_deref().unwrap_or("");
        let base = format!("{scope}{SCOPE_END}{host}");
        let owner = super::route_owner(hawser_model::Kind::HttpRoute, &entry.route);
        let value = format!("{}:{backend};{owner}", rank(entry));
        let mut keys = Vec::new();
        match entry.path.kind {
            PathMatchKind::Exact => keys.push(format!("{base}{}{ROUTE_KEY_END}", entry.path.value)),
            _ => {
                let prefix = entry.path.value.trim_end_matches('/');
                if !prefix.is_empty() {
                    keys.push(format!("{base}{prefix}{ROUTE_KEY_END}"));
                }
                keys.push(format!("{base}{prefix}/"));
            }
        }
        for key in keys {
            self.entries.entry(key).or_insert_with(|| value.clone());
        }
    }

    /// The map, longest key first.
    pub(crate) fn into_plan(self) -> MapPlan {
        let entries = self
            .entries
            .into_iter()
            .map(|(key, value)| MapEntry::new(key, value))
            .collect();
        MapPlan::longest_first(GATEWAY_MAP_PATH, entries)
            .with_twin(hawser_plan::GATEWAY_TWIN_MAP_PATH)
    }
}

#[cfg(test)]
mod tests;
