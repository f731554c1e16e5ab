//! HTTPRoute rules: matches checked, filters and backends resolved, ready to
//! be expanded per listener hostname into [`HttpRuleEntry`]s.

use hawser_model::{
    HttpRoute, HttpRouteMatch, HttpRouteRule, HttpTimeouts, Kind, PathMatchKind, Store, ValueMatch,
    ValueMatchKind,
};

use super::backend_refs::{Resolver, reachable};
use super::compiled::Compiled;
use super::filters::{self, FilterScope, Resolution};
use super::table::{FilterEntry, HttpRuleEntry, WeightedBackend};
use crate::validate;

/// One valid rule of an HTTPRoute.
#[derive(Debug, Clone)]
pub(super) struct HttpRule {
    pub index: usize,
    pub matches: Vec<HttpRouteMatch>,
    pub filters: Vec<FilterEntry>,
    pub backends: Vec<WeightedBackend>,
    pub timeouts: HttpTimeouts,
    pub unavailable: bool,
}

impl HttpRule {
    /// The rule's entries for one hostname, one per match.
    pub fn entries(&self, route: &HttpRoute, hostname: &Option<String>) -> Vec<HttpRuleEntry> {
        self.matches
            .iter()
            .enumerate()
            .map(|(match_index, m)| HttpRuleEntry {
                route: route.meta.key.clone(),
                rule_index: self.index,
                match_index,
                hostname: hostname.clone(),
                path: m.path.clone(),
                method: m.method.clone(),
                headers: m.headers.clone(),
                query_params: m.query_params.clone(),
                filters: self.filters.clone(),
                backends: self.backends.clone(),
                timeouts: self.timeouts,
                unavailable: self.unavailable,
            })
            .collect()
    }
}

pub(super) fn compile(store: &Store, route: &HttpRoute) -> Compiled<HttpRule> {
    // A route without rules gets the default: match everything, no backends.
    let default_rule = [HttpRouteRule {
        name: None,
        matches: vec![HttpRouteMatch::default()],
        filters: Vec::new(),
        backend_refs: Vec::new(),
        timeouts: HttpTimeouts::default(),
    }];
    let rules = if route.rules.is_empty() {
        &default_rule[..]
    } else {
        &route.rules
    };
    Compiled::build(store, Kind::HttpRoute, &route.meta, rules, rule)
}

fn rule(
    index: usize,
    given: &HttpRouteRule,
    resolver: &Resolver<'_>,
    resolution: &mut Resolution,
) -> Result<HttpRule, String> {
    for m in &given.matches {
        check_match(m)?;
    }
    if let HttpTimeouts {
        request_ms: Some(request),
        backend_request_ms: Some(backend),
    } = given.timeouts
        && request > 0
        && backend > request
    {
        return Err(format!(
            "timeouts.backendRequest ({backend} ms) may not exceed timeouts.request ({request} ms)"
        ));
    }
    let scope = FilterScope {
        grpc: false,
        prefix_matches: given
            .matches
            .iter()
            .all(|m| m.path.kind == PathMatchKind::PathPrefix),
    };
    let filters = filters::filters(&given.filters, scope, resolver, resolution)?;
    let backends = filters::weighted_backends(&given.backend_refs, scope, resolver, resolution)?;
    let redirects = filters
        .iter()
        .any(|f| matches!(f, FilterEntry::RequestRedirect(_)));
    Ok(HttpRule {
        index,
        matches: given.matches.clone(),
        unavailable: resolution.answers_500 || (!redirects && !reachable(&backends)),
        filters,
        backends,
        timeouts: given.timeouts,
    })
}

fn check_match(m: &HttpRouteMatch) -> Result<(), String> {
    match m.path.kind {
        PathMatchKind::Exact | PathMatchKind::PathPrefix => validate::path(&m.path.value)?,
        PathMatchKind::RegularExpression => validate::regex("path regex", &m.path.value)?,
    }
    check_values("header", &m.headers)?;
    check_values("query parameter", &m.query_params)?;
    if let Some(method) = &m.method
        && !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return Err(format!("method {method:?} is not an HTTP method"));
    }
    Ok(())
}

pub(super) fn check_values(what: &str, matches: &[ValueMatch]) -> Result<(), String> {
    for v in matches {
        validate::header_name(&format!("{what} name"), &v.name)?;
        match v.kind {
            ValueMatchKind::Exact => {
                validate::header_value(&format!("{what} {} value", v.name), &v.value)?;
            }
            ValueMatchKind::RegularExpression => {
                validate::regex(&format!("{what} {} regex", v.name), &v.value)?;
            }
        }
    }
    Ok(())
}
