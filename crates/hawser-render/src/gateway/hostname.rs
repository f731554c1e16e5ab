//! Hostname intersection between a listener and a route, and how specific a
//! hostname is (for precedence). A `*.` wildcard matches one or more labels
//! (`*.example.com` matches `a.example.com` and `a.b.example.com`, never
//! `example.com`), as the Gateway API defines it.

use std::cmp::Reverse;

/// The hostnames a route serves on a listener; `None` is any host. Empty
/// when none intersect (the route does not attach to that listener).
pub(super) fn intersect(listener: Option<&str>, route: &[String]) -> Vec<Option<String>> {
    match (listener, route.is_empty()) {
        (None, true) => vec![None],
        (None, false) => route.iter().cloned().map(Some).collect(),
        (Some(listener), true) => vec![Some(listener.to_string())],
        (Some(listener), false) => {
            let mut hosts: Vec<Option<String>> = route
                .iter()
                .filter_map(|host| intersect_one(listener, host))
                .map(Some)
                .collect();
            hosts.sort();
            hosts.dedup();
            hosts
        }
    }
}

/// The more specific of two hostnames when one includes the other.
fn intersect_one(a: &str, b: &str) -> Option<String> {
    if a == b {
        return Some(a.to_string());
    }
    let covers = |wildcard_suffix: &str, host: &str| {
        host.strip_suffix(wildcard_suffix)
            .is_some_and(|label| label.ends_with('.') && label.len() > 1)
    };
    match (a.strip_prefix('*'), b.strip_prefix('*')) {
        (None, None) => None,
        // ".example.com" after the '*'
        (Some(suffix), None) => covers(suffix.trim_start_matches('.'), b).then(|| b.to_string()),
        (None, Some(suffix)) => covers(suffix.trim_start_matches('.'), a).then(|| a.to_string()),
        (Some(sa), Some(sb)) => {
            if sa.ends_with(sb) {
                Some(a.to_string())
            } else if sb.ends_with(sa) {
                Some(b.to_string())
            } else {
                None
            }
        }
    }
}

/// Whether two served hostnames can match the same request (`None` is any host).
pub(super) fn overlap(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => intersect_one(a, b).is_some(),
        _ => true,
    }
}

/// Sorts most specific first: exact hostnames (longest first), then
/// wildcards (longest first), then any host.
pub(crate) type HostRank = (u8, Reverse<usize>);

pub(crate) fn rank(hostname: Option<&str>) -> HostRank {
    match hostname {
        None => (2, Reverse(0)),
        Some(h) if h.starts_with('*') => (1, Reverse(h.len())),
        Some(h) => (0, Reverse(h.len())),
    }
}
