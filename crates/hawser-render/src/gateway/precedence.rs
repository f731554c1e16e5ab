//! The order in which rules are tried, as the Gateway API orders them.
//!
//! HTTPRoute: hostname (exact before wildcard, longer first, any host last),
//! then an `Exact` path, then the longest `PathPrefix` (a
//! `RegularExpression` path, whose precedence the spec leaves to the
//! implementation, comes after every prefix, longer patterns first), then a
//! method match, then more header matches, then more query matches; ties go
//! to the oldest route, then the first by namespace/name, then rule order,
//! then match order.
//!
//! GRPCRoute: hostname, then the longest service, then the longest method
//! (exact before regular expression), then more header matches, then the
//! same tie-breakers. TLSRoute: hostname, then age and name. TCPRoute: age
//! and name (the first route on a listener is served).

use std::cmp::Reverse;

use hawser_model::{ObjectKey, PathMatch, PathMatchKind, ValueMatchKind};

use super::hostname::{self, HostRank};
use super::table::{GrpcRuleEntry, HttpRuleEntry, TcpRouteEntry, TlsRouteEntry};

/// Older first; a route without a creation time (a local manifest) counts
/// as newer than any that has one.
type Age = (bool, Option<String>);
type Tie = (Age, ObjectKey, usize, usize);

fn age(created: Option<&str>) -> Age {
    (created.is_none(), created.map(str::to_string))
}

fn path_rank(path: &PathMatch) -> (u8, Reverse<usize>) {
    let class = match path.kind {
        PathMatchKind::Exact => 0,
        PathMatchKind::PathPrefix => 1,
        PathMatchKind::RegularExpression => 2,
    };
    (class, Reverse(path.value.len()))
}

pub(super) type HttpOrder = (
    HostRank,
    (u8, Reverse<usize>),
    Reverse<bool>,
    Reverse<usize>,
    Reverse<usize>,
    Tie,
);

pub(super) fn http(e: &HttpRuleEntry, created: Option<&str>) -> HttpOrder {
    (
        hostname::rank(e.hostname.as_deref()),
        path_rank(&e.path),
        Reverse(e.method.is_some()),
        Reverse(e.headers.len()),
        Reverse(e.query_params.len()),
        (age(created), e.route.clone(), e.rule_index, e.match_index),
    )
}

pub(super) type GrpcOrder = (
    HostRank,
    Reverse<usize>,
    Reverse<usize>,
    u8,
    Reverse<usize>,
    Tie,
);

pub(super) fn grpc(e: &GrpcRuleEntry, created: Option<&str>) -> GrpcOrder {
    let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let (service, method, kind) = match &e.method {
        Some(m) => (
            len(&m.service),
            len(&m.method),
            u8::from(m.kind == ValueMatchKind::RegularExpression),
        ),
        None => (0, 0, 2),
    };
    (
        hostname::rank(e.hostname.as_deref()),
        Reverse(service),
        Reverse(method),
        kind,
        Reverse(e.headers.len()),
        (age(created), e.route.clone(), e.rule_index, e.match_index),
    )
}

pub(super) fn tls(e: &TlsRouteEntry, created: Option<&str>) -> (HostRank, Age, ObjectKey) {
    (
        hostname::rank(e.hostname.as_deref()),
        age(created),
        e.route.clone(),
    )
}

pub(super) fn tcp(e: &TcpRouteEntry, created: Option<&str>) -> (Age, ObjectKey) {
    (age(created), e.route.clone())
}
