//! Request paths and query strings, as the Kubernetes REST API lays them out.
//!
//! ```text
//! /api/v1[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
//! /apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
//! ```

use std::collections::BTreeMap;

/// Which objects a request is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    /// `v1` for the core group, `group/version` otherwise.
    pub group_version: String,
    /// `None` for cluster-scoped objects and all-namespace collections.
    pub namespace: Option<String>,
    pub plural: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl Route {
    /// The collection (group/version and plural) the route names.
    pub fn collection(&self) -> Collection {
        Collection {
            group_version: self.group_version.clone(),
            plural: self.plural.clone(),
        }
    }
}

/// A resource type: group/version and plural.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Collection {
    pub group_version: String,
    pub plural: String,
}

/// Parses a request path; `None` when it is not a resource path.
pub(crate) fn parse_path(path: &str) -> Option<Route> {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let (group_version, rest) = match segments.first().map(String::as_str) {
        Some("api") if segments.len() >= 2 => (segments[1].clone(), &segments[2..]),
        Some("apis") if segments.len() >= 3 => {
            (format!("{}/{}", segments[1], segments[2]), &segments[3..])
        }
        _ => return None,
    };
    let namespaced = rest.first().is_some_and(|s| s == "namespaces")
        && rest.len() >= 3
        // `/api/v1/namespaces/{name}/status` is the Namespace's own subresource.
        && !(rest.len() == 3 && group_version == "v1" && matches!(rest[2].as_str(), "status" | "finalize"));
    let (namespace, rest) = if namespaced {
        (Some(rest[1].clone()), &rest[2..])
    } else {
        (None, rest)
    };
    let plural = rest.first()?.clone();
    if rest.len() > 3 {
        return None;
    }
    Some(Route {
        group_version,
        namespace,
        plural,
        name: rest.get(1).cloned(),
        subresource: rest.get(2).cloned(),
    })
}

/// The decoded query parameters of a request (the last of repeated ones wins).
#[derive(Debug, Clone, Default)]
pub(crate) struct Query(BTreeMap<String, String>);

impl Query {
    pub fn parse(query: Option<&str>) -> Query {
        let mut params = BTreeMap::new();
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            params.insert(percent_decode(key), percent_decode(value));
        }
        Query(params)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }
}

/// `application/x-www-form-urlencoded` decoding: `%XX` escapes and `+` for space.
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match (hex_value(bytes[i + 1]), hex_value(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push(high << 4 | low);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_core_group_and_named_groups() {
        let route = parse_path("/api/v1/namespaces/app/secrets/tls").unwrap();
        assert_eq!(route.group_version, "v1");
        assert_eq!(route.namespace.as_deref(), Some("app"));
        assert_eq!(route.plural, "secrets");
        assert_eq!(route.name.as_deref(), Some("tls"));

        let route = parse_path("/apis/networking.k8s.io/v1/ingresses").unwrap();
        assert_eq!(route.group_version, "networking.k8s.io/v1");
        assert_eq!(route.namespace, None);
        assert_eq!(route.plural, "ingresses");

        let route = parse_path("/apis/hawser.dev/v1alpha1/namespaces/a/configs/x/status").unwrap();
        assert_eq!(route.subresource.as_deref(), Some("status"));

        let route = parse_path("/api/v1/namespaces/app").unwrap();
        assert_eq!(
            (route.plural.as_str(), route.name.as_deref()),
            ("namespaces", Some("app"))
        );
        let route = parse_path("/api/v1/namespaces/app/status").unwrap();
        assert_eq!(route.subresource.as_deref(), Some("status"));
        assert!(parse_path("/version").is_none());
    }

    #[test]
    fn query_values_are_decoded() {
        let query = Query::parse(Some(
            "labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&watch=true&x=%zz",
        ));
        assert_eq!(query.get("labelSelector"), Some("app=web,tier in (a,b)"));
        assert!(query.flag("watch"));
        assert_eq!(query.get("x"), Some("%zz"));
        assert_eq!(query.get("missing"), None);
    }
}
