//! Regular-expression routes (`hawser.dev/use-regex`) and path rewrites
//! (`hawser.dev/rewrite-target`), as ingress-nginx serves them: a regex path
//! matches case-insensitively from the start of the request path, and a
//! rewrite replaces the whole path of a request its route's path matches.
//!
//! Regex routes live in a map of their own (`map_reg`, longest expression
//! first), keyed on `<host><path>`, looked up before the other routes.
//! Rewrites are `replace-path` lines, one per route, taken only by requests
//! the route's map entry chose (the entry's value carries the route's index).

use serde::Serialize;

/// One route's rewrite: a line in haproxy.cfg (a change reloads).
#[derive(Debug, Clone, Serialize)]
pub struct Rewrite {
    /// The Ingress, for the `# from:` mark.
    pub ingress: String,
    /// The feature set and index the route's map entry carries.
    pub id: String,
    pub index: usize,
    /// Matched against the request path; written in single quotes.
    pub regex: String,
    /// `replace-path`'s format; written in single quotes.
    pub target: String,
}

/// The `map_reg` key of a regex route: the host (a `*.` wildcard as one
/// label, none as any host), then the path expression, case-insensitive.
pub fn regex_key(host: &str, path: &str) -> String {
    let host = match host.strip_prefix("*.") {
        Some(parent) => format!("[^./]+\\.{}", escape(parent)),
        None if host.is_empty() => "[^/]*".to_string(),
        None => escape(host),
    };
    format!("^{host}(?i:{path})")
}

/// What a rewrite matches the path with: the regex path, or the literal
/// path as a prefix; case-insensitive, from the start.
pub fn rewrite_regex(path: &str, is_regex: bool) -> String {
    if is_regex {
        format!("(?i)^{path}")
    } else {
        format!("(?i)^{}", escape(path))
    }
}

/// ingress-nginx's rule for `use-regex` (`use-regex: host`): every path of
/// the `hosts`, whatever Ingress it is on, is matched as a regular
/// expression. Their exact and prefix entries move to the regex map: a
/// Prefix path as its literal text from the start (nginx's `~* ^<path>`, so
/// `/foo` matches `/foobar` too), an Exact path whole.
pub(super) fn host_wide(table: &mut super::RouteTable, hosts: &std::collections::BTreeSet<String>) {
    for (host, path, target) in take_hosts(&mut table.exact, hosts) {
        if target.exact_type {
            let entry = regex_key(&host, &format!("{}$", escape(&path)));
            table.regex.entry(entry).or_insert(target);
        } // a Prefix path's own text: its prefix entry covers it
    }
    for (host, path, target) in take_hosts(&mut table.prefix, hosts) {
        let literal = path.strip_suffix('/').unwrap_or(&path);
        let entry = regex_key(&host, &escape(literal));
        table.regex.entry(entry).or_insert(target);
    }
}

/// The entries of `map` (keyed `<host><path>`) for one of `hosts`, taken
/// out, as (host, path, target).
fn take_hosts(
    map: &mut std::collections::BTreeMap<String, super::Target>,
    hosts: &std::collections::BTreeSet<String>,
) -> Vec<(String, String, super::Target)> {
    let keys: Vec<String> = map
        .keys()
        .filter(|key| key.find('/').is_some_and(|at| hosts.contains(&key[..at])))
        .cloned()
        .collect();
    keys.into_iter()
        .filter_map(|key| {
            let target = map.remove(&key)?;
            let at = key.find('/')?;
            Some((key[..at].to_string(), key[at..].to_string(), target))
        })
        .collect()
}

/// `text` with every character that means something in a regular
/// expression escaped.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::compile_like_haproxy;

    #[test]
    fn keys_and_rewrites_compile_as_haproxy_compiles_them() {
        for (host, path, key) in [
            (
                "a.example.com",
                "/api(/|$)(.*)",
                r"^a\.example\.com(?i:/api(/|$)(.*))",
            ),
            ("*.example.com", "/x", r"^[^./]+\.example\.com(?i:/x)"),
            ("", "/x", r"^[^/]*(?i:/x)"),
        ] {
            assert_eq!(regex_key(host, path), key);
            assert_eq!(compile_like_haproxy(key, false), Ok(()));
        }
        let literal = rewrite_regex("/a.b(c)", false);
        assert_eq!(literal, r"(?i)^/a\.b\(c\)");
        assert_eq!(compile_like_haproxy(&literal, false), Ok(()));
    }
}
