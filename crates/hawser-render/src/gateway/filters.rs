//! Filters and weighted backends of HTTPRoute and GRPCRoute rules: every
//! value checked before it can reach HAProxy, every backend resolved.

use hawser_model::{
    HeaderModifier, HttpBackendRef, HttpFilter, PathModifier, RequestMirror, RequestRedirect,
    UrlRewrite,
};

use super::backend_refs::{ANSWERS_500, Resolver, Unresolved};
use super::table::{FilterEntry, MirrorEntry, WeightedBackend};
use crate::backends::BackendKey;
use crate::validate;

/// The status codes a RequestRedirect may answer with.
const REDIRECT_CODES: &[i64] = &[301, 302, 303, 307, 308];

/// How the model names the custom filter type.
const EXTENSION_REF: &str = "ExtensionRef";

/// What becomes of the requests of a mirror whose backendRef does not resolve.
const NOT_MIRRORED: &str = "the rule serves without that mirror";

/// What resolving one rule's references produced.
#[derive(Debug, Default)]
pub(super) struct Resolution {
    pub used: Vec<BackendKey>,
    pub unresolved: Option<Unresolved>,
    /// A filter could not be applied: every request of the rule answers 500.
    pub answers_500: bool,
}

/// Where a rule's filters may act.
#[derive(Debug, Clone, Copy)]
pub(super) struct FilterScope {
    /// gRPC rules take header modifiers only.
    pub grpc: bool,
    /// Every match of the rule is a `PathPrefix` (ReplacePrefixMatch needs one).
    pub prefix_matches: bool,
}

pub(super) fn filters(
    given: &[HttpFilter],
    scope: FilterScope,
    resolver: &Resolver<'_>,
    resolution: &mut Resolution,
) -> Result<Vec<FilterEntry>, String> {
    let redirects = given
        .iter()
        .filter(|f| matches!(f, HttpFilter::RequestRedirect(_)))
        .count();
    let rewrites = given
        .iter()
        .filter(|f| matches!(f, HttpFilter::UrlRewrite(_)))
        .count();
    if redirects > 0 && rewrites > 0 {
        return Err("RequestRedirect and URLRewrite cannot be used together".to_string());
    }
    let once = |f: fn(&HttpFilter) -> bool| given.iter().filter(|g| f(g)).count() <= 1;
    let single = once(|f| matches!(f, HttpFilter::RequestRedirect(_)))
        && once(|f| matches!(f, HttpFilter::UrlRewrite(_)))
        && once(|f| matches!(f, HttpFilter::RequestHeaderModifier(_)))
        && once(|f| matches!(f, HttpFilter::ResponseHeaderModifier(_)));
    if !single {
        return Err("a filter other than RequestMirror is given twice".to_string());
    }
    let mut entries = Vec::new();
    for f in given {
        if let HttpFilter::Unsupported(kind) = f
            && kind == EXTENSION_REF
        {
            // An unresolvable custom filter is not skipped: its requests answer 500.
            resolution.answers_500 = true;
            resolution.unresolved.get_or_insert(Unresolved {
                reason: "InvalidKind",
                message: "ExtensionRef filters are not supported; the rule answers 500".to_string(),
                effect: ANSWERS_500,
            });
            continue;
        }
        if let HttpFilter::RequestMirror(m) = f
            && !scope.grpc
        {
            entries.extend(mirror(m, resolver, resolution));
            continue;
        }
        entries.push(filter(f, scope)?);
    }
    Ok(entries)
}

/// A mirror whose backendRef resolves; one that does not is dropped, as the
/// spec asks, and reported in `ResolvedRefs`.
fn mirror(
    m: &RequestMirror,
    resolver: &Resolver<'_>,
    resolution: &mut Resolution,
) -> Option<FilterEntry> {
    match resolver.resolve(&m.backend) {
        Ok(key) => {
            resolution.used.push(key.clone());
            Some(FilterEntry::RequestMirror(MirrorEntry {
                backend: key.name(),
                key,
                fraction: m.fraction,
            }))
        }
        Err(unresolved) => {
            resolution.unresolved.get_or_insert(Unresolved {
                message: format!("requestMirror: {}", unresolved.message),
                effect: NOT_MIRRORED,
                ..unresolved
            });
            None
        }
    }
}

fn filter(f: &HttpFilter, scope: FilterScope) -> Result<FilterEntry, String> {
    Ok(match f {
        HttpFilter::RequestHeaderModifier(m) => {
            header_modifier("requestHeaderModifier", m)?;
            FilterEntry::RequestHeaderModifier(m.clone())
        }
        HttpFilter::ResponseHeaderModifier(m) => {
            header_modifier("responseHeaderModifier", m)?;
            FilterEntry::ResponseHeaderModifier(m.clone())
        }
        HttpFilter::RequestRedirect(r) if !scope.grpc => {
            redirect(r, scope)?;
            FilterEntry::RequestRedirect(r.clone())
        }
        HttpFilter::UrlRewrite(r) if !scope.grpc => {
            rewrite(r, scope)?;
            FilterEntry::UrlRewrite(r.clone())
        }
        // A copy of a gRPC call would have to stream over HTTP/2.
        HttpFilter::RequestMirror(_) => {
            return Err("GRPCRoute rules take no RequestMirror".to_string());
        }
        HttpFilter::RequestRedirect(_) | HttpFilter::UrlRewrite(_) => {
            return Err("GRPCRoute rules take no RequestRedirect or URLRewrite".to_string());
        }
        HttpFilter::Unsupported(kind) => {
            return Err(format!("filter type {kind} is not supported"));
        }
    })
}

fn header_modifier(what: &str, m: &HeaderModifier) -> Result<(), String> {
    for (name, value) in m.set.iter().chain(&m.add) {
        validate::header_name(&format!("{what} header"), name)?;
        validate::header_value(&format!("{what} header {name} value"), value)?;
    }
    for name in &m.remove {
        validate::header_name(&format!("{what} header"), name)?;
    }
    Ok(())
}

fn path_modifier(what: &str, path: &PathModifier, scope: FilterScope) -> Result<(), String> {
    match path {
        PathModifier::ReplaceFullPath(p) => Ok(validate::path(p)?),
        PathModifier::ReplacePrefixMatch(p) => {
            if !scope.prefix_matches {
                return Err(format!(
                    "{what} ReplacePrefixMatch needs every match of the rule to be a PathPrefix"
                ));
            }
            Ok(validate::path(p)?)
        }
    }
}

fn plain_host(what: &str, host: &str) -> Result<(), String> {
    if host.starts_with('*') {
        return Err(format!("{what} {host:?} may not be a wildcard"));
    }
    Ok(validate::host(host)?)
}

fn redirect(r: &RequestRedirect, scope: FilterScope) -> Result<(), String> {
    if let Some(scheme) = &r.scheme
        && scheme != "http"
        && scheme != "https"
    {
        return Err(format!(
            "requestRedirect scheme {scheme:?} is not http or https"
        ));
    }
    if let Some(host) = &r.hostname {
        plain_host("requestRedirect hostname", host)?;
    }
    if let Some(port) = r.port {
        validate::port("requestRedirect port", port)?;
    }
    if let Some(path) = &r.path {
        path_modifier("requestRedirect", path, scope)?;
    }
    if !REDIRECT_CODES.contains(&r.status_code) {
        return Err(format!(
            "requestRedirect statusCode {} is not 301, 302, 303, 307 or 308",
            r.status_code
        ));
    }
    Ok(())
}

fn rewrite(r: &UrlRewrite, scope: FilterScope) -> Result<(), String> {
    if let Some(host) = &r.hostname {
        plain_host("urlRewrite hostname", host)?;
    }
    if let Some(path) = &r.path {
        path_modifier("urlRewrite", path, scope)?;
    }
    Ok(())
}

/// A rule's backendRefs with their weights and filters.
pub(super) fn weighted_backends(
    refs: &[HttpBackendRef],
    scope: FilterScope,
    resolver: &Resolver<'_>,
    resolution: &mut Resolution,
) -> Result<Vec<WeightedBackend>, String> {
    refs.iter()
        .map(|r| {
            let weight = u32::try_from(r.backend.weight)
                .map_err(|_| format!("backendRef {:?} has a negative weight", r.backend.name))?;
            let filters = filters(&r.filters, scope, resolver, resolution)?;
            if filters
                .iter()
                .any(|f| matches!(f, FilterEntry::RequestRedirect(_)))
            {
                return Err("a backendRef may not redirect".to_string());
            }
            Ok(WeightedBackend {
                target: resolver.target(
                    &r.backend,
                    &mut resolution.used,
                    &mut resolution.unresolved,
                ),
                weight,
                filters,
            })
        })
        .collect()
}
