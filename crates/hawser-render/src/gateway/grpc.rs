//! GRPCRoute rules: service/method and header matches checked, filters and
//! backends resolved, ready to be expanded per hostname into [`GrpcRuleEntry`]s.

use hawser_model::{GrpcRoute, GrpcRouteMatch, GrpcRouteRule, Kind, Store, ValueMatchKind};

use super::backend_refs::{Resolver, reachable};
use super::compiled::Compiled;
use super::filters::{self, FilterScope, Resolution};
use super::http::check_values;
use super::table::{FilterEntry, GrpcRuleEntry, WeightedBackend};
use crate::gateway_frontends::method_regex;
use crate::validate;

#[derive(Debug, Clone)]
pub(super) struct GrpcRule {
    pub index: usize,
    pub matches: Vec<GrpcRouteMatch>,
    pub filters: Vec<FilterEntry>,
    pub backends: Vec<WeightedBackend>,
    pub unavailable: bool,
}

impl GrpcRule {
    pub fn entries(&self, route: &GrpcRoute, hostname: &Option<String>) -> Vec<GrpcRuleEntry> {
        self.matches
            .iter()
            .enumerate()
            .map(|(match_index, m)| GrpcRuleEntry {
                route: route.meta.key.clone(),
                rule_index: self.index,
                match_index,
                hostname: hostname.clone(),
                method: m.method.clone(),
                headers: m.headers.clone(),
                filters: self.filters.clone(),
                backends: self.backends.clone(),
                unavailable: self.unavailable,
            })
            .collect()
    }
}

pub(super) fn compile(store: &Store, route: &GrpcRoute) -> Compiled<GrpcRule> {
    let default_rule = [GrpcRouteRule {
        name: None,
        matches: vec![GrpcRouteMatch::default()],
        filters: Vec::new(),
        backend_refs: Vec::new(),
    }];
    let rules = if route.rules.is_empty() {
        &default_rule[..]
    } else {
        &route.rules
    };
    Compiled::build(store, Kind::GrpcRoute, &route.meta, rules, rule)
}

fn rule(
    index: usize,
    given: &GrpcRouteRule,
    resolver: &Resolver<'_>,
    resolution: &mut Resolution,
) -> Result<GrpcRule, String> {
    for m in &given.matches {
        check_match(m)?;
    }
    let scope = FilterScope {
        grpc: true,
        prefix_matches: false,
    };
    let filters = filters::filters(&given.filters, scope, resolver, resolution)?;
    let backends = filters::weighted_backends(&given.backend_refs, scope, resolver, resolution)?;
    Ok(GrpcRule {
        index,
        matches: given.matches.clone(),
        unavailable: resolution.answers_500 || !reachable(&backends),
        filters,
        backends,
    })
}

fn check_match(m: &GrpcRouteMatch) -> Result<(), String> {
    if let Some(method) = &m.method {
        if method.service.is_none() && method.method.is_none() {
            return Err("a method match needs a service or a method".to_string());
        }
        let names = [
            ("service", &method.service, true),
            ("method", &method.method, false),
        ];
        for (what, value, dotted) in names {
            let Some(value) = value else { continue };
            match method.kind {
                ValueMatchKind::Exact => validate::grpc_name(what, value, dotted)?,
                ValueMatchKind::RegularExpression => validate::regex(what, value)?,
            }
        }
        if method.kind == ValueMatchKind::RegularExpression {
            // Each part compiles alone; so must the path regex HAProxy gets.
            let pattern = method_regex(method.service.as_deref(), method.method.as_deref());
            validate::compile_like_haproxy(&pattern, false)
                .map_err(|e| format!("method match {pattern:?} {e}"))?;
        }
    }
    check_values("header", &m.headers)
}
