//! External authentication: `auth-url`, `auth-signin`,
//! `auth-response-headers`, as oauth2-proxy and ingress-nginx's
//! `auth_request` expect them.
//!
//! The auth URL names a Service by its cluster DNS name
//! (`http[s]://<service>.<namespace>.svc[.<cluster domain>][:<port>]/<path>`,
//! or `<service>` alone for one in the Ingress's namespace): the
//! sub-requests go through an ordinary backend of that Service port, whose
//! servers the agent changes at runtime and whose annotations
//! (`backend-ca-secret`, `backend-sni`) say how its pods are spoken to. An
//! auth service outside the cluster is reached through an ExternalName
//! Service. A Service in another namespace is used only when the setting
//! `authServiceNamespaces` lists that namespace, so an Ingress cannot make
//! HAProxy call any Service of the cluster on its behalf.

use std::collections::BTreeMap;

use hawser_model::{ServicePortRef, Store};

use super::AnnotationError;
use super::values::Expected;
use crate::backends::BackendKey;

/// The annotation naming the auth service's URL.
const AUTH_URL_ANNOTATION: &str = "hawser.dev/auth-url";

/// What an Ingress's external authentication asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalAuth {
    /// The auth URL as written.
    pub url: String,
    /// The auth Service's namespace; `None`: the Ingress's.
    pub namespace: Option<String>,
    pub service: String,
    /// The Service port (80 or 443 unless the URL says).
    pub port: u16,
    /// The URL is `https://`: the pods are spoken to over TLS.
    pub tls: bool,
    /// `<host>[:<port>]<path>[?<query>]`: the sub-request's Host and target.
    pub target: String,
    /// Where a request the auth service answers 401 is redirected, with
    /// `rd=` (the original URL) added.
    pub signin: Option<String>,
    /// Headers of the auth service's 2xx answer copied onto the request,
    /// lowercase, in the order given.
    pub response_headers: Vec<String>,
    /// The HAProxy backend the sub-requests go through; set by the route
    /// table ([`ExternalAuth::backend_key`]).
    pub backend: Option<String>,
}

const EXPECTED_URL: Expected = "an http:// or https:// URL naming a Service (<service>.<namespace>.svc[.<cluster domain>] or <service>), with an optional port, path and query, without user, fragment, spaces, quotes, backslashes or angle brackets";

/// An auth URL: a Service's cluster DNS name, a port, a path and a query.
pub(super) fn auth_url(value: &str) -> Result<ExternalAuth, Expected> {
    let value = value.trim();
    let (tls, rest) = match value.split_once("://") {
        Some(("https", rest)) => (true, rest),
        Some(("http", rest)) => (false, rest),
        _ => return Err(EXPECTED_URL),
    };
    let clean = value.len() <= 2048
        && value
            .bytes()
            .all(|b| (b'!'..=b'~').contains(&b) && !b"\"'\\<>`#{}|^".contains(&b));
    if !clean {
        return Err(EXPECTED_URL);
    }
    let (authority, path) = rest
        .find(['/', '?'])
        .map_or((rest, "/"), |at| rest.split_at(at));
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => {
            let digits =
                !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
            let port = digits
                .then(|| port.parse::<u16>().ok())
                .flatten()
                .filter(|p| *p != 0)
                .ok_or(EXPECTED_URL)?;
            (host, port)
        }
        None => (authority, if tls { 443 } else { 80 }),
    };
    let (service, namespace) = service_of(host).ok_or(EXPECTED_URL)?;
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    Ok(ExternalAuth {
        url: value.to_string(),
        namespace,
        service,
        port,
        tls,
        target: format!("{authority}{path}"),
        signin: None,
        response_headers: Vec::new(),
        backend: None,
    })
}

/// `(service, namespace)` of a Service's cluster DNS name.
fn service_of(host: &str) -> Option<(String, Option<String>)> {
    let labels: Vec<&str> = host.split('.').collect();
    let label = |l: &str| crate::validate::label_name("host", l).is_ok();
    if !labels.iter().all(|l| label(l)) {
        return None;
    }
    match labels.as_slice() {
        [service] => Some((service.to_string(), None)),
        [service, namespace, "svc", ..] => Some((service.to_string(), Some(namespace.to_string()))),
        _ => None,
    }
}

/// Response headers to copy: a comma-separated list of header names.
pub(super) fn header_names(value: &str) -> Result<Vec<String>, Expected> {
    const EXPECTED: Expected = "a comma-separated list of header names (letters, digits and -, at most 32, not Host, Content-Length or a hop-by-hop header)";
    let mut names: Vec<String> = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let name = name.to_ascii_lowercase();
        if !super::values::settable_header(&name) {
            return Err(EXPECTED);
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if names.is_empty() || names.len() > 32 {
        return Err(EXPECTED);
    }
    Ok(names)
}

impl ExternalAuth {
    /// The namespace of the auth Service for an Ingress in `namespace`.
    pub fn service_namespace<'a>(&'a self, namespace: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(namespace)
    }

    /// The backend the sub-requests of an Ingress in `namespace` go
    /// through: the Service port's own, or one of its own when the URL's
    /// scheme asks another protocol than the Service's annotations.
    pub fn backend_key(&self, namespace: &str, store: &Store) -> BackendKey {
        let namespace = self.service_namespace(namespace).to_string();
        let key = hawser_model::ObjectKey::new(&namespace, &self.service);
        let protocol = store
            .service(&key)
            .and_then(|s| s.annotations.get(super::BACKEND_PROTOCOL_ANNOTATION))
            .map_or("HTTP", |p| p.trim());
        let wanted = if self.tls { "HTTPS" } else { "HTTP" };
        let mut overrides = BTreeMap::new();
        if !protocol.eq_ignore_ascii_case(wanted) {
            overrides.insert(
                super::BACKEND_PROTOCOL_ANNOTATION.to_string(),
                wanted.to_string(),
            );
        }
        BackendKey {
            namespace,
            service: self.service.clone(),
            port: ServicePortRef::Number(i32::from(self.port)),
            overrides,
        }
    }
}

/// Whether an Ingress in `namespace` may send its sub-requests to the
/// auth Service: one in its own namespace, or in one `allowed` lists.
pub fn check_namespace(
    auth: &ExternalAuth,
    namespace: &str,
    allowed: &[String],
) -> Result<(), AnnotationError> {
    let target = auth.service_namespace(namespace);
    if target == namespace || allowed.iter().any(|n| n == target) {
        return Ok(());
    }
    Err(AnnotationError::Needs {
        annotation: AUTH_URL_ANNOTATION.to_string(),
        needs: format!(
            "a Service in the Ingress's namespace, or the setting authServiceNamespaces to list namespace {target:?} (it names Service {target}/{})",
            auth.service
        ),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn an_auth_url_names_a_service_port_and_a_target() {
        let auth =
            auth_url("http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth?x=1").unwrap();
        assert_eq!(auth.service, "oauth2-proxy");
        assert_eq!(auth.namespace.as_deref(), Some("auth"));
        assert_eq!(auth.port, 4180);
        assert!(!auth.tls);
        assert_eq!(
            auth.target,
            "oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth?x=1"
        );
        let auth = auth_url("https://checker").unwrap();
        assert_eq!((auth.namespace, auth.port, auth.tls), (None, 443, true));
        assert_eq!(auth.target, "checker/");
        assert_eq!(auth_url("http://a.b.svc?q").unwrap().target, "a.b.svc/?q");
    }

    #[test]
    fn anything_but_a_service_url_is_refused() {
        for bad in [
            "ftp://a.b.svc/",
            "//a.b.svc/",
            "http://auth.example.com/",
            "http://user@a.b.svc/",
            "http://a.b.svc:0/",
            "http://a.b.svc:99999/",
            "http://a.b.svc/x y",
            "http://a.b.svc/#frag",
            "http://A_B.b.svc/",
            "http://a.b.svc/\"",
            "http://",
        ] {
            assert!(auth_url(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn response_headers_are_header_names() {
        assert_eq!(
            header_names("X-Auth-Request-User, x-auth-request-email,X-Auth-Request-User").unwrap(),
            ["x-auth-request-user", "x-auth-request-email"]
        );
        for bad in ["", " , ", "Host", "x y", "x:y", "content-length"] {
            assert!(header_names(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn another_namespace_needs_the_setting() {
        let auth = auth_url("http://oauth.auth.svc/check").unwrap();
        assert!(check_namespace(&auth, "auth", &[]).is_ok());
        let refused = check_namespace(&auth, "shop", &[]).unwrap_err().to_string();
        assert!(refused.contains("authServiceNamespaces"), "{refused}");
        assert!(check_namespace(&auth, "shop", &["auth".to_string()]).is_ok());
        let local = auth_url("http://oauth/check").unwrap();
        assert!(check_namespace(&local, "shop", &[]).is_ok());
    }
}
