//! HAProxy ACL conditions for Gateway API matches, as typed fields a
//! template writes as `[!]{ <fetch> [<matcher>] ["<value>"] }`.
//!
//! Fetch names embed only validated header and parameter names (token
//! characters); values are written through the `quote` filter.

use hawser_model::{MirrorFraction, PathMatch, PathMatchKind, ValueMatch, ValueMatchKind};
use serde::Serialize;

use crate::gateway::ListenerProtocol;

/// The variable holding the request's host: lower-cased, without a port.
pub(crate) const HOST_VAR: &str = "var(txn.gw_host)";
/// The variable holding the request's path with `/` appended, so that a
/// prefix `/foo` is the byte prefix `/foo/` of `/foo` and `/foo/bar`, never of `/foobar`.
pub(crate) const SLASHED_PATH_VAR: &str = "var(txn.gw_slashed_path)";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Condition {
    pub negate: bool,
    /// A sample fetch, e.g. `req.fhdr(x-foo)`.
    pub fetch: String,
    /// `-m str`, `-m beg`, ...; empty for a boolean fetch or the fetch's own match.
    pub matcher: String,
    /// The pattern, written quoted.
    pub value: Option<String>,
}

impl Condition {
    pub(crate) fn new(fetch: impl Into<String>, matcher: &str, value: impl Into<String>) -> Self {
        Condition {
            negate: false,
            fetch: fetch.into(),
            matcher: matcher.to_string(),
            value: Some(value.into()),
        }
    }
}

/// A regular expression that must match the whole value (Gateway API
/// implementations match regexes in full).
fn whole(regex: &str) -> String {
    format!("^({regex})$")
}

/// HTTPS listeners take TLS connections, HTTP listeners clear-text ones.
pub(crate) fn tls(protocol: ListenerProtocol) -> Condition {
    Condition {
        negate: protocol != ListenerProtocol::Https,
        fetch: "ssl_fc".to_string(),
        matcher: String::new(),
        value: None,
    }
}

/// `*.example.com` matches any number of labels before `.example.com`.
pub(crate) fn host(hostname: Option<&str>) -> Option<Condition> {
    let hostname = hostname?;
    Some(match hostname.strip_prefix('*') {
        Some(suffix) => Condition::new(HOST_VAR, "-m end", suffix),
        None => Condition::new(HOST_VAR, "-m str", hostname),
    })
}

/// `None` when the match takes every path (`PathPrefix /`).
pub(crate) fn path(path: &PathMatch) -> Option<Condition> {
    match path.kind {
        PathMatchKind::Exact => Some(Condition::new("path", "-m str", &path.value)),
        PathMatchKind::PathPrefix => {
            let prefix = path.value.trim_end_matches('/');
            (!prefix.is_empty())
                .then(|| Condition::new(SLASHED_PATH_VAR, "-m beg", format!("{prefix}/")))
        }
        PathMatchKind::RegularExpression => {
            Some(Condition::new("path", "-m reg", whole(&path.value)))
        }
    }
}

pub(crate) fn method(method: &str) -> Condition {
    Condition::new("method", "", method)
}

fn value_match(fetch: String, m: &ValueMatch) -> Condition {
    match m.kind {
        ValueMatchKind::Exact => Condition::new(fetch, "-m str", &m.value),
        ValueMatchKind::RegularExpression => Condition::new(fetch, "-m reg", whole(&m.value)),
    }
}

pub(crate) fn header(m: &ValueMatch) -> Condition {
    value_match(format!("req.fhdr({})", m.name), m)
}

pub(crate) fn query_param(m: &ValueMatch) -> Condition {
    value_match(format!("url_param({})", m.name), m)
}

/// The rule `id` was chosen.
pub(crate) fn rule_is(id: &str) -> Condition {
    Condition::new("var(txn.gw_rule)", "-m str", id)
}

/// The weighted pick fell in `[from, to)`.
pub(crate) fn pick_range(from: u32, to: u32) -> [Condition; 2] {
    [
        Condition::new("var(txn.gw_pick)", "-m int ge", from.to_string()),
        Condition::new("var(txn.gw_pick)", "-m int lt", to.to_string()),
    ]
}

/// Holds for `numerator` requests out of `denominator`, at random; `None`
/// when it holds for every request.
pub(crate) fn share(fraction: MirrorFraction) -> Option<Condition> {
    (!fraction.is_all()).then(|| {
        Condition::new(
            format!("rand({})", fraction.denominator),
            "-m int lt",
            fraction.numerator.to_string(),
        )
    })
}
