//! The `enable-cors` and `cors-*` annotations, with ingress-nginx's
//! defaults (its annotations documentation, "Enable CORS"): any origin,
//! the usual methods and headers, credentials allowed, a 20-day max age.

use std::collections::BTreeMap;

use super::Cors;
use super::values::{self, Expected};

/// `cors-allow-methods` unless set.
pub const CORS_DEFAULT_METHODS: &str = "GET, PUT, POST, DELETE, PATCH, OPTIONS";
/// `cors-allow-headers` unless set.
pub const CORS_DEFAULT_HEADERS: &str = "DNT, Keep-Alive, User-Agent, X-Requested-With, If-Modified-Since, Cache-Control, Content-Type, Range, Authorization";
/// `cors-max-age` unless set: 20 days.
const CORS_DEFAULT_MAX_AGE: u64 = 1_728_000;

/// An origin a browser sends: `*` (any), or `http(s)://host[:port]` with a
/// lowercase DNS name or an IPv4 address, no path.
pub fn origins(value: &str) -> Result<Vec<String>, Expected> {
    const EXPECTED: Expected = "\"*\" or a comma-separated list of origins (https://app.example.com, http://localhost:8080)";
    let mut list = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "*" {
            list.push(part.to_string());
            continue;
        }
        let rest = part
            .strip_prefix("https://")
            .or_else(|| part.strip_prefix("http://"))
            .ok_or(EXPECTED)?;
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        };
        let host_ok = (crate::validate::host(host).is_ok() && !host.starts_with('*'))
            || host.parse::<std::net::Ipv4Addr>().is_ok();
        let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p != 0));
        if !host_ok || !port_ok {
            return Err(EXPECTED);
        }
        list.push(part.to_string());
    }
    if list.is_empty() || list.len() > 256 || (list.len() > 1 && list.iter().any(|o| o == "*")) {
        return Err(EXPECTED);
    }
    Ok(list)
}

/// A comma-separated list of HTTP tokens (methods or header names), written
/// back as `A, B, C`; or `*` alone (any, for requests without credentials).
pub fn tokens(value: &str) -> Result<String, Expected> {
    const EXPECTED: Expected = "\"*\" or a comma-separated list of names (letters, digits and -)";
    if value.trim() == "*" {
        return Ok("*".to_string());
    }
    let names: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    let ok = !names.is_empty()
        && names.len() <= 64
        && names
            .iter()
            .all(|n| n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if ok {
        Ok(names.join(", "))
    } else {
        Err(EXPECTED)
    }
}

/// The CORS an Ingress asks for; `None` unless `enable-cors` is `true`.
/// `read` looks an annotation up by name (without the prefix) and parses it.
pub fn cors(
    ours: &BTreeMap<&str, &str>,
    read: &super::annotations::Reader<'_>,
) -> Result<Option<Cors>, super::AnnotationError> {
    let enabled = read.parse("enable-cors", values::boolean)?.unwrap_or(false);
    if !enabled {
        if let Some(name) = ours.keys().find(|name| name.starts_with("cors-")) {
            return Err(super::AnnotationError::Needs {
                annotation: format!("{}{name}", super::ANNOTATION_PREFIX),
                needs: format!("{}enable-cors: \"true\"", super::ANNOTATION_PREFIX),
            });
        }
        return Ok(None);
    }
    Ok(Some(Cors {
        origins: read
            .parse("cors-allow-origin", origins)?
            .unwrap_or_else(|| vec!["*".to_string()]),
        methods: read
            .parse("cors-allow-methods", tokens)?
            .unwrap_or_else(|| CORS_DEFAULT_METHODS.to_string()),
        headers: read
            .parse("cors-allow-headers", tokens)?
            .unwrap_or_else(|| CORS_DEFAULT_HEADERS.to_string()),
        expose: read.parse("cors-expose-headers", tokens)?,
        credentials: read
            .parse("cors-allow-credentials", values::boolean)?
            .unwrap_or(true),
        max_age: read
            .parse("cors-max-age", values::seconds)?
            .unwrap_or(CORS_DEFAULT_MAX_AGE),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_exact_or_any() {
        assert_eq!(
            origins("https://app.example.com, http://localhost:8080").unwrap(),
            ["https://app.example.com", "http://localhost:8080"]
        );
        assert_eq!(origins("*").unwrap(), ["*"]);
        for bad in [
            "",
            "app.example.com",
            "https://app.example.com/path",
            "https://*.example.com",
            "*, https://a.example.com",
            "https://a.example.com:99999",
            "https://a b.example.com",
        ] {
            assert!(origins(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn token_lists_are_normalised() {
        assert_eq!(tokens("GET,POST , PUT").unwrap(), "GET, POST, PUT");
        assert!(tokens("GET;POST").is_err());
        assert!(tokens("X-A\r\nX-B").is_err());
    }
}
