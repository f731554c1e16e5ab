//! Annotations of other controllers' dialects on an Ingress hawser serves.
//!
//! An Ingress moved from ingress-nginx or haproxytech's controller may still
//! carry their annotations. hawser does not serve them (yet): served
//! silently without them, an Ingress that relied on
//! `nginx.ingress.kubernetes.io/whitelist-source-range` or `auth-url` would
//! become public without a word. So by default an annotation whose meaning is
//! access control, authentication, rate limiting or a snippet refuses the
//! Ingress, and any other is reported as ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The dialects hawser recognises but does not serve.
pub const FOREIGN_PREFIXES: &[&str] = &[
    "nginx.ingress.kubernetes.io/",
    "haproxy.org/",
    "haproxy.com/",
    "ingress.kubernetes.io/",
];

/// Words that mark an annotation about access control, authentication
/// (client certificates included), rate limiting, raw configuration, or
/// verifying the pods' certificates (in either dialect's names).
const SECURITY_WORDS: &[&str] = &[
    "whitelist",
    "allowlist",
    "allow-list",
    "blacklist",
    "denylist",
    "deny-list",
    "auth",
    "limit",
    "rate",
    "snippet",
    "satisfy",
    "src-ip",
    "client-ca",
    "client-crt",
    "ssl-verify",
    "server-ca",
    "proxy-ssl-secret",
];

/// What to do with another dialect's annotations (`foreignAnnotations`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForeignAnnotations {
    /// Refuse the Ingress for access control, auth, rate limits and
    /// snippets; report the others as ignored.
    #[default]
    Refuse,
    /// Serve the Ingress without any of them, reporting each as ignored.
    Warn,
    /// Serve the Ingress without them, saying nothing.
    Ignore,
}

/// Whether the annotation `key` is about access control, authentication,
/// rate limits, raw configuration or verifying the pods (by its name).
pub fn is_security(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    SECURITY_WORDS.iter().any(|word| name.contains(word))
}

/// What an object's foreign annotations (of [`FOREIGN_PREFIXES`] and
/// `also`) mean under `policy`: `Err` with the refusal, or the warnings to
/// report (one per ignored annotation).
pub fn foreign_annotations(
    annotations: &BTreeMap<String, String>,
    policy: ForeignAnnotations,
    also: &[&str],
) -> Result<Vec<String>, String> {
    if policy == ForeignAnnotations::Ignore {
        return Ok(Vec::new());
    }
    let foreign = annotations.keys().filter(|key| {
        FOREIGN_PREFIXES
            .iter()
            .chain(also)
            .any(|p| key.starts_with(p))
    });
    let mut warnings = Vec::new();
    for key in foreign {
        let security = is_security(key);
        if security && policy == ForeignAnnotations::Refuse {
            return Err(format!(
                "annotation {key} asks for access control, authentication, a rate limit, a snippet or verified pods that hawser does not serve; it is refused rather than served without it (docs/annotations.md lists what hawser serves; the setting foreignAnnotations: warn serves it anyway)"
            ));
        }
        warnings.push(format!(
            "annotation {key} is not served by hawser and is ignored"
        ));
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(keys: &[&str]) -> BTreeMap<String, String> {
        keys.iter()
            .map(|k| (k.to_string(), "x".to_string()))
            .collect()
    }

    #[test]
    fn security_annotations_refuse_the_rest_warn() {
        for key in [
            "nginx.ingress.kubernetes.io/whitelist-source-range",
            "nginx.ingress.kubernetes.io/auth-url",
            "nginx.ingress.kubernetes.io/limit-rps",
            "nginx.ingress.kubernetes.io/configuration-snippet",
            "haproxy.org/allow-list",
            "haproxy.org/rate-limit-requests",
            "haproxy.org/backend-config-snippet",
            "ingress.kubernetes.io/auth-type",
            "nginx.ingress.kubernetes.io/auth-tls-secret",
            "nginx.ingress.kubernetes.io/proxy-ssl-verify",
            "nginx.ingress.kubernetes.io/proxy-ssl-secret",
            "haproxy.org/client-ca",
            "haproxy.org/client-crt-optional",
            "haproxy.org/server-ca",
            "haproxy.org/src-ip-header",
            "haproxy.org/deny-list",
            "haproxy.org/blacklist",
        ] {
            let refused =
                foreign_annotations(&annotations(&[key]), ForeignAnnotations::Refuse, &[]);
            assert!(refused.is_err_and(|e| e.contains(key)), "{key}");
            let warned = foreign_annotations(&annotations(&[key]), ForeignAnnotations::Warn, &[]);
            assert_eq!(warned.map(|w| w.len()), Ok(1), "{key}");
        }
        let other = annotations(&[
            "nginx.ingress.kubernetes.io/proxy-read-timeout",
            "kubernetes.io/ingress.class",
            "example.com/team",
        ]);
        let warnings = foreign_annotations(&other, ForeignAnnotations::Refuse, &[]).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("proxy-read-timeout"));
        assert_eq!(
            foreign_annotations(&other, ForeignAnnotations::Ignore, &[]),
            Ok(Vec::new())
        );
    }
}
