//! A rule's filters as HAProxy actions: header modifiers, redirects, URL
//! rewrites and request mirrors, with the Gateway API's defaults (a
//! redirect's scheme and port come from the listener; a scheme's default
//! port is left out of the Location; a prefix replacement keeps what follows
//! the matched prefix). Mirrors come after the other filters of their list,
//! so the copy is the request as those filters left it.

use hawser_model::{HeaderModifier, PathModifier, RequestRedirect, UrlRewrite};

use super::conditions::{self, Condition, HOST_VAR};
use super::{Action, RuleView, Step, log_format_literal};
use crate::gateway::{FilterEntry, ListenerEntry, ListenerProtocol, MirrorEntry};

/// What a filter needs to know about where its rule is served.
pub(super) struct FilterContext<'a> {
    pub listener: &'a ListenerEntry,
    /// The matched `PathPrefix` (without a trailing `/`), if the match is one.
    pub prefix: Option<String>,
}

/// Adds the actions of `filters` under `when`; true when one redirects.
pub(super) fn add_filters(
    rule: &mut RuleView,
    filters: &[FilterEntry],
    when: &[Condition],
    ctx: &FilterContext<'_>,
) -> bool {
    let mut redirects = false;
    let mut mirrors = Vec::new();
    for filter in filters {
        let steps = match filter {
            FilterEntry::RequestHeaderModifier(m) => header_steps(m),
            FilterEntry::ResponseHeaderModifier(m) => {
                rule.response
                    .extend(header_steps(m).into_iter().map(|step| Action {
                        step,
                        when: when.to_vec(),
                    }));
                continue;
            }
            FilterEntry::RequestRedirect(r) => {
                redirects = true;
                redirect_steps(r, ctx)
            }
            FilterEntry::UrlRewrite(r) => rewrite_steps(r, ctx),
            FilterEntry::RequestMirror(m) => {
                mirrors.extend(mirror_action(m, when));
                continue;
            }
        };
        rule.request.extend(steps.into_iter().map(|step| Action {
            step,
            when: when.to_vec(),
        }));
    }
    rule.request.extend(mirrors);
    redirects
}

/// The mirror under `when`, sampled when it copies only a share of the
/// requests; `None` when it copies none.
fn mirror_action(m: &MirrorEntry, when: &[Condition]) -> Option<Action> {
    if m.fraction.is_none() {
        return None;
    }
    let mut when = when.to_vec();
    when.extend(conditions::share(m.fraction));
    Some(Action {
        step: Step::Mirror {
            backend: m.backend.clone(),
        },
        when,
    })
}

/// Set, then add, then remove, as the spec lists them.
fn header_steps(m: &HeaderModifier) -> Vec<Step> {
    let set = m.set.iter().map(|(name, value)| Step::SetHeader {
        name: name.clone(),
        value: log_format_literal(value),
    });
    let add = m.add.iter().map(|(name, value)| Step::AddHeader {
        name: name.clone(),
        value: log_format_literal(value),
    });
    let remove = m
        .remove
        .iter()
        .map(|name| Step::DelHeader { name: name.clone() });
    set.chain(add).chain(remove).collect()
}

/// The new path as a log-format, with the steps that compute it first.
fn new_path(path: &PathModifier, ctx: &FilterContext<'_>, steps: &mut Vec<Step>) -> String {
    match path {
        PathModifier::ReplaceFullPath(full) => log_format_literal(full),
        PathModifier::ReplacePrefixMatch(replacement) => {
            // Validated: every match of the rule is a PathPrefix.
            let prefix = ctx.prefix.as_deref().unwrap_or_default();
            let replacement = replacement.trim_end_matches('/');
            steps.push(Step::KeepPathAfter {
                offset: prefix.len(),
            });
            steps.push(Step::NewPath {
                format: format!("{}%[var(txn.gw_rest)]", log_format_literal(replacement)),
            });
            "%[var(txn.gw_new_path)]".to_string()
        }
    }
}

fn redirect_steps(r: &RequestRedirect, ctx: &FilterContext<'_>) -> Vec<Step> {
    let listener_scheme = match ctx.listener.protocol {
        ListenerProtocol::Https => "https",
        _ => "http",
    };
    let scheme = r.scheme.as_deref().unwrap_or(listener_scheme);
    let port = match (r.port, &r.scheme) {
        (Some(port), _) => i64::from(port),
        (None, Some(s)) if s == "https" => 443,
        (None, Some(_)) => 80,
        (None, None) => i64::from(ctx.listener.port),
    };
    let default_port = (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
    let host = r
        .hostname
        .as_deref()
        .map_or_else(|| format!("%[{HOST_VAR}]"), log_format_literal);
    let mut steps = Vec::new();
    let path = match &r.path {
        Some(path) => new_path(path, ctx, &mut steps),
        None => "%[pathq]".to_string(),
    };
    let port = if default_port {
        String::new()
    } else {
        format!(":{port}")
    };
    steps.push(Step::Redirect {
        location: format!("{scheme}://{host}{port}{path}"),
        code: r.status_code,
    });
    steps
}

fn rewrite_steps(r: &UrlRewrite, ctx: &FilterContext<'_>) -> Vec<Step> {
    let mut steps = Vec::new();
    if let Some(path) = &r.path {
        let format = new_path(path, ctx, &mut steps);
        steps.push(Step::SetPath { format });
    }
    if let Some(host) = &r.hostname {
        steps.push(Step::SetHeader {
            name: "host".to_string(),
            value: log_format_literal(host),
        });
    }
    steps
}
