//! What a Service asks of the backends its ports become: the protocol
//! HAProxy speaks to its pods, the SNI it sends, PROXY protocol, and session
//! affinity. Each becomes server keywords that the rendered servers and the
//! servers the agent adds at runtime carry alike (`ServerPlan::keywords`).

use std::collections::BTreeMap;

use super::annotations::Reader;
use super::values::{self, Expected};
use super::{ANNOTATION_PREFIX, AnnotationError};

const BACKEND_PROTOCOL: &str = "backend-protocol";
const BACKEND_SNI: &str = "backend-sni";
const SEND_PROXY_PROTOCOL: &str = "send-proxy-protocol";
const AFFINITY: &str = "affinity";
const SESSION_COOKIE_NAME: &str = "session-cookie-name";
const SESSION_COOKIE_MAX_AGE: &str = "session-cookie-max-age";
const BACKEND_CA_SECRET: &str = "backend-ca-secret";
const BALANCE: &str = "balance";
const TIMEOUT_SERVER: &str = "timeout-server";
const TIMEOUT_CONNECT: &str = "timeout-connect";
/// The balance algorithms a backend may use.
const BALANCE_ALGORITHMS: &[&str] = &["roundrobin", "leastconn", "first", "source", "random"];
/// The annotation saying how HAProxy talks to a Service's pods.
pub const BACKEND_PROTOCOL_ANNOTATION: &str = "hawser.dev/backend-protocol";
/// The annotation naming the Secret (key `ca.crt`) a Service's TLS pods are
/// verified with (a cluster source keeps its data while a Service names it).
pub const BACKEND_CA_SECRET_ANNOTATION: &str = "hawser.dev/backend-ca-secret";
/// The backend annotations a Service may carry.
pub const BACKEND_ANNOTATIONS: &[&str] = &[
    BACKEND_PROTOCOL,
    BACKEND_SNI,
    SEND_PROXY_PROTOCOL,
    AFFINITY,
    SESSION_COOKIE_NAME,
    SESSION_COOKIE_MAX_AGE,
    BACKEND_CA_SECRET,
    BALANCE,
    TIMEOUT_SERVER,
    TIMEOUT_CONNECT,
];
/// ingress-nginx's `session-cookie-name` default.
const DEFAULT_COOKIE: &str = "INGRESSCOOKIE";

/// How HAProxy talks to the pods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackendProtocol {
    #[default]
    Http,
    Https,
    H2c,
    Grpc,
    Grpcs,
}

/// What a Service's backend annotations ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendFeatures {
    pub protocol: BackendProtocol,
    /// The SNI sent to TLS pods.
    pub sni: Option<String>,
    /// `send-proxy` (1) or `send-proxy-v2` (2).
    pub proxy_protocol: Option<u8>,
    /// Sticky sessions: the cookie's name and max age (none: a session cookie).
    pub affinity: Option<(String, Option<u64>)>,
    /// The Secret (in the Service's namespace) whose `ca.crt` TLS pods are
    /// verified with, and the tree path it is written to once read.
    pub ca: Option<(String, String)>,
    /// The balance algorithm (`roundrobin` unless said).
    pub balance: Option<String>,
    /// The backend's `timeout server`.
    pub timeout_server: Option<String>,
    /// The backend's `timeout connect`.
    pub timeout_connect: Option<String>,
}

impl BackendFeatures {
    /// The server keywords these features give (each one CLI word), for a
    /// server named `server`.
    pub fn server_keywords(&self, server: &str) -> Vec<String> {
        let protocol: &[&str] = match self.protocol {
            BackendProtocol::Http => &[],
            BackendProtocol::Https => &["ssl"],
            // Written as the server's `proto` (see `proto`).
            BackendProtocol::H2c | BackendProtocol::Grpc => &[],
            BackendProtocol::Grpcs => &["ssl", "alpn", "h2"],
        };
        let mut words: Vec<String> = protocol.iter().map(|w| w.to_string()).collect();
        if words.first().is_some_and(|w| w == "ssl") {
            match &self.ca {
                Some((_, path)) => words.extend([
                    "verify".into(),
                    "required".into(),
                    "ca-file".into(),
                    path.clone(),
                ]),
                // Without a CA the pods' certificates are not verified (said
                // in docs/annotations.md and `hawser status`).
                None => words.extend(["verify".into(), "none".into()]),
            }
        }
        if let Some(sni) = &self.sni {
            words.push("sni".to_string());
            words.push(format!("str({sni})"));
        }
        match self.proxy_protocol {
            Some(1) => words.push("send-proxy".to_string()),
            Some(_) => words.push("send-proxy-v2".to_string()),
            None => {}
        }
        if self.affinity.is_some() {
            words.push("cookie".to_string());
            words.push(server.to_string());
        }
        words
    }

    /// The server's `proto`: `h2` for HTTP/2 in clear text.
    pub fn proto(&self) -> Option<&'static str> {
        matches!(self.protocol, BackendProtocol::H2c | BackendProtocol::Grpc).then_some("h2")
    }

    /// The backend's `cookie` line arguments, with affinity.
    pub fn cookie(&self) -> Option<String> {
        let (name, max_age) = self.affinity.as_ref()?;
        let mut line = format!("{name} insert indirect nocache httponly");
        if let Some(age) = max_age {
            line.push_str(&format!(" maxlife {age}s"));
        }
        Some(line)
    }
}

/// The backend features of a Service's `hawser.dev/` annotations (`ours`:
/// by name without the prefix, only the backend ones).
pub fn backend_features(ours: &BTreeMap<&str, &str>) -> Result<BackendFeatures, AnnotationError> {
    let read = Reader(ours);
    let protocol = read
        .parse(BACKEND_PROTOCOL, |v| match v.trim() {
            "HTTP" => Ok(BackendProtocol::Http),
            "HTTPS" => Ok(BackendProtocol::Https),
            "H2C" => Ok(BackendProtocol::H2c),
            "GRPC" => Ok(BackendProtocol::Grpc),
            "GRPCS" => Ok(BackendProtocol::Grpcs),
            _ => Err("one of HTTP, HTTPS, H2C, GRPC, GRPCS"),
        })?
        .unwrap_or_default();
    let sni = read.parse(BACKEND_SNI, |v| {
        (crate::validate::host(v).is_ok() && !v.starts_with('*'))
            .then(|| v.to_string())
            .ok_or("a DNS name")
    })?;
    let proxy_protocol = read.parse(SEND_PROXY_PROTOCOL, |v| match v.trim() {
        "v1" => Ok(1),
        "v2" => Ok(2),
        _ => Err("v1 or v2"),
    })?;
    let cookie = read.parse(AFFINITY, |v| {
        (v.trim() == "cookie").then_some(()).ok_or("cookie")
    })?;
    let affinity = match cookie {
        Some(()) => Some((
            read.parse(SESSION_COOKIE_NAME, cookie_name)?
                .unwrap_or_else(|| DEFAULT_COOKIE.to_string()),
            read.parse(SESSION_COOKIE_MAX_AGE, values::seconds)?,
        )),
        None => {
            if let Some(name) = [SESSION_COOKIE_NAME, SESSION_COOKIE_MAX_AGE]
                .iter()
                .find(|n| ours.contains_key(**n))
            {
                return Err(AnnotationError::Needs {
                    annotation: format!("{ANNOTATION_PREFIX}{name}"),
                    needs: format!("{ANNOTATION_PREFIX}{AFFINITY}: cookie"),
                });
            }
            None
        }
    };
    let ca = read.parse(BACKEND_CA_SECRET, super::auth::secret_name)?;
    if ca.is_some() && !matches!(protocol, BackendProtocol::Https | BackendProtocol::Grpcs) {
        return Err(AnnotationError::Needs {
            annotation: BACKEND_CA_SECRET_ANNOTATION.to_string(),
            needs: format!("{ANNOTATION_PREFIX}{BACKEND_PROTOCOL}: HTTPS or GRPCS"),
        });
    }
    let balance = read.parse(BALANCE, |v| {
        BALANCE_ALGORITHMS
            .contains(&v.trim())
            .then(|| v.trim().to_string())
            .ok_or("one of roundrobin, leastconn, first, source, random")
    })?;
    let duration = |v: &str| {
        crate::validate::duration("timeout", v.trim())
            .map(|()| v.trim().to_string())
            .map_err(|_| "a duration (30s, 5m, or milliseconds)")
    };
    let timeout_server = read.parse(TIMEOUT_SERVER, duration)?;
    let timeout_connect = read.parse(TIMEOUT_CONNECT, duration)?;
    Ok(BackendFeatures {
        protocol,
        sni,
        proxy_protocol,
        affinity,
        ca: ca.map(|name| (name, String::new())),
        balance,
        timeout_server,
        timeout_connect,
    })
}

/// A cookie name: an RFC 6265 token of letters, digits, `-` and `_`.
fn cookie_name(value: &str) -> Result<String, Expected> {
    values::name_token(value).map_err(|_| "a cookie name of letters, digits, - and _")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(pairs: &[(&str, &str)]) -> Result<BackendFeatures, AnnotationError> {
        let ours: BTreeMap<&str, &str> = pairs.iter().copied().collect();
        backend_features(&ours)
    }

    #[test]
    fn each_protocol_gives_its_keywords() {
        let words = |pairs: &[(&str, &str)]| features(pairs).unwrap().server_keywords("ep_1");
        assert!(words(&[]).is_empty());
        assert_eq!(
            words(&[("backend-protocol", "HTTPS")]),
            ["ssl", "verify", "none"]
        );
        assert!(words(&[("backend-protocol", "GRPC")]).is_empty());
        assert_eq!(
            features(&[("backend-protocol", "H2C")]).unwrap().proto(),
            Some("h2")
        );
        assert_eq!(
            words(&[
                ("backend-protocol", "GRPCS"),
                ("backend-sni", "api.internal")
            ]),
            [
                "ssl",
                "alpn",
                "h2",
                "verify",
                "none",
                "sni",
                "str(api.internal)"
            ]
        );
        assert_eq!(words(&[("send-proxy-protocol", "v2")]), ["send-proxy-v2"]);
        assert_eq!(words(&[("affinity", "cookie")]), ["cookie", "ep_1"]);
    }

    #[test]
    fn affinity_names_its_cookie() {
        let f = features(&[
            ("affinity", "cookie"),
            ("session-cookie-name", "route"),
            ("session-cookie-max-age", "3600"),
        ])
        .unwrap();
        assert_eq!(
            f.cookie().as_deref(),
            Some("route insert indirect nocache httponly maxlife 3600s")
        );
        assert_eq!(
            features(&[("affinity", "cookie")])
                .unwrap()
                .cookie()
                .as_deref(),
            Some("INGRESSCOOKIE insert indirect nocache httponly")
        );
    }

    #[test]
    fn bad_values_are_refused_naming_the_annotation() {
        for (pairs, expected) in [
            (
                vec![("backend-protocol", "FTP")],
                "hawser.dev/backend-protocol",
            ),
            (vec![("backend-sni", "a b")], "hawser.dev/backend-sni"),
            (
                vec![("send-proxy-protocol", "v3")],
                "hawser.dev/send-proxy-protocol",
            ),
            (vec![("affinity", "ip")], "hawser.dev/affinity"),
            (
                vec![("session-cookie-name", "x")],
                "hawser.dev/session-cookie-name needs",
            ),
            (
                vec![("affinity", "cookie"), ("session-cookie-name", "a;b")],
                "hawser.dev/session-cookie-name",
            ),
        ] {
            let error = features(&pairs).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
