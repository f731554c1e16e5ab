//! What an Ingress changes of a request on its way, beyond headers:
//! `upstream-vhost` (the Host the pods see: ingress-nginx's name,
//! haproxytech's `set-host`), `path-rewrite` (haproxytech's regex rewrites),
//! `request-redirect` (haproxytech's: the same request on another host),
//! and `server-alias` (ingress-nginx's: more hosts for its rules).

use super::values::Expected;

/// A host, with a port or not: `app.internal`, `app.internal:8080`.
pub fn host_and_port(value: &str) -> Result<String, Expected> {
    const EXPECTED: Expected = "a host name, with :port or not";
    let value = value.trim().to_ascii_lowercase();
    let (host, port) = match value.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (value.as_str(), None),
    };
    let host_ok = crate::validate::host(host).is_ok() && !host.starts_with('*');
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p != 0));
    (host_ok && port_ok)
        .then_some(value.clone())
        .ok_or(EXPECTED)
}

/// One rewrite of a request's path: HAProxy's `replace-path <regex> <format>`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PathRewrite {
    /// A PCRE2 regex (checked to compile as HAProxy compiles it).
    pub regex: String,
    /// The new path, with `\1`… for the regex's captures.
    pub target: String,
}

/// haproxytech's `path-rewrite` lines: `<path>` (the whole path replaced)
/// or `<regex> <replacement>`.
pub fn path_rewrites(value: &str) -> Result<Vec<PathRewrite>, Expected> {
    const EXPECTED: Expected = "lines of \"<path>\" or \"<regex> <replacement>\" (a PCRE2 regex; the replacement a path with \\1 to \\9 for captures, without quotes or %)";
    let mut rewrites = Vec::new();
    for line in value.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (regex, target) = match words.as_slice() {
            [target] => ("^.*$", *target),
            [regex, target] => (*regex, *target),
            _ => return Err(EXPECTED),
        };
        let plain = |text: &str| {
            !text.is_empty()
                && text.len() <= 1024
                && text
                    .bytes()
                    .all(|b| (b'!'..=b'~').contains(&b) && !b"'\"%`".contains(&b))
        };
        let captures_ok = target
            .split('\\')
            .skip(1)
            .all(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
        if !plain(regex)
            || !plain(target)
            || !target.starts_with('/') && !target.starts_with('\\')
            || !captures_ok
            || crate::validate::regex("path-rewrite", regex).is_err()
        {
            return Err(EXPECTED);
        }
        rewrites.push(PathRewrite {
            regex: regex.to_string(),
            target: target.to_string(),
        });
    }
    if rewrites.is_empty() || rewrites.len() > 16 {
        return Err(EXPECTED);
    }
    Ok(rewrites)
}

/// ingress-nginx's `server-alias`: comma-separated host names.
pub fn aliases(value: &str) -> Result<Vec<String>, Expected> {
    const EXPECTED: Expected = "a comma-separated list of host names";
    let mut hosts = Vec::new();
    for host in value.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        crate::validate::host(host).map_err(|_| EXPECTED)?;
        let host = host.to_ascii_lowercase();
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    if hosts.is_empty() || hosts.len() > 32 {
        return Err(EXPECTED);
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn path_rewrites_are_regexes_and_paths_only() {
        let rules = path_rewrites("/foo/(.*) /\\1\n/").unwrap();
        assert_eq!(rules[0].regex, "/foo/(.*)");
        assert_eq!(rules[0].target, "/\\1");
        assert_eq!(rules[1].regex, "^.*$");
        for bad in [
            "",
            "a b c",
            "(.*) /%[env(HOME)]",
            "( /x",
            "/x' if TRUE",
            "(.*) /\\x",
        ] {
            assert!(path_rewrites(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hosts_and_aliases() {
        assert_eq!(
            host_and_port("App.Internal:8080").unwrap(),
            "app.internal:8080"
        );
        assert!(host_and_port("a b").is_err());
        assert!(host_and_port("*.x.com").is_err());
        assert_eq!(aliases("a.example.com, b.example.com").unwrap().len(), 2);
        assert!(aliases("a.example.com/x").is_err());
    }
}
