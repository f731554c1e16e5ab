//! The `hawser.dev/` annotation dialect of an Ingress.
//!
//! Every value is parsed into its type; one bad value refuses the Ingress
//! alone, naming the annotation, the value and what is expected. An unknown
//! `hawser.dev/` annotation is refused as well: an Ingress that asks for
//! something must never be served without it.

use std::collections::BTreeMap;

use super::values::{self, Expected};
use super::{IngressFeatures, REDIRECT_CODES, Redirect};
use crate::config::Settings;

/// The prefix of hawser's own annotations.
pub const ANNOTATION_PREFIX: &str = "hawser.dev/";
/// The annotation naming the Secret of an Ingress's basic-auth users (a
/// cluster source keeps that Secret's data while an Ingress names it).
pub const AUTH_SECRET_ANNOTATION: &str = "hawser.dev/auth-secret";
/// The annotation naming the Secret (key `ca.crt`) client certificates are
/// verified with (kept by a cluster source like the one above).
pub const CLIENT_AUTH_SECRET_ANNOTATION: &str = "hawser.dev/client-auth-secret";

const SSL_REDIRECT: &str = "ssl-redirect";
const SSL_REDIRECT_CODE: &str = "ssl-redirect-code";
const HSTS: &str = "hsts";
const HSTS_MAX_AGE: &str = "hsts-max-age";
const HSTS_INCLUDE_SUBDOMAINS: &str = "hsts-include-subdomains";
const HSTS_PRELOAD: &str = "hsts-preload";
const ALLOWLIST: &str = "allowlist-source-range";
const DENYLIST: &str = "denylist-source-range";
const PERMANENT_REDIRECT: &str = "permanent-redirect";
const TEMPORAL_REDIRECT: &str = "temporal-redirect";
const PERMANENT_REDIRECT_CODE: &str = "permanent-redirect-code";
const TEMPORAL_REDIRECT_CODE: &str = "temporal-redirect-code";
const LIMIT_STATUS_CODE: &str = "limit-status-code";
const APP_ROOT: &str = "app-root";
const RATE_LIMIT_RPS: &str = "rate-limit-rps";
const RATE_LIMIT_BURST: &str = "rate-limit-burst";
const LIMIT_CONNECTIONS: &str = "limit-connections";
const REQUEST_HEADERS: &str = "request-headers";
const AUTH_TYPE: &str = "auth-type";
const PROXY_BODY_SIZE: &str = "proxy-body-size";
const USE_REGEX: &str = "use-regex";
const SSL_PASSTHROUGH: &str = "ssl-passthrough";
const CLIENT_AUTH_SECRET: &str = "client-auth-secret";
const CLIENT_AUTH_VERIFY: &str = "client-auth-verify";
const CLIENT_AUTH_PASS: &str = "client-auth-pass-certificate";
const REWRITE_TARGET: &str = "rewrite-target";
const AUTH_SECRET: &str = "auth-secret";
const AUTH_REALM: &str = "auth-realm";
const AUTH_SECRET_TYPE: &str = "auth-secret-type";
const RESPONSE_HEADERS: &str = "response-headers";
const UPSTREAM_VHOST: &str = "upstream-vhost";
const REQUEST_REDIRECT: &str = "request-redirect";
const REQUEST_REDIRECT_CODE: &str = "request-redirect-code";
const PATH_REWRITE: &str = "path-rewrite";
const SERVER_ALIAS: &str = "server-alias";
const FROM_TO_WWW_REDIRECT: &str = "from-to-www-redirect";
const AUTH_URL: &str = "auth-url";
const AUTH_SIGNIN: &str = "auth-signin";
const AUTH_RESPONSE_HEADERS: &str = "auth-response-headers";
const CORS: &[&str] = &[
    "enable-cors",
    "cors-allow-origin",
    "cors-allow-methods",
    "cors-allow-headers",
    "cors-expose-headers",
    "cors-allow-credentials",
    "cors-max-age",
];

/// The Ingress annotations this version serves (besides CORS's and the
/// backend ones).
const INGRESS_ANNOTATIONS: &[&str] = &[
    SSL_REDIRECT,
    SSL_REDIRECT_CODE,
    HSTS,
    HSTS_MAX_AGE,
    HSTS_INCLUDE_SUBDOMAINS,
    HSTS_PRELOAD,
    ALLOWLIST,
    DENYLIST,
    PERMANENT_REDIRECT,
    TEMPORAL_REDIRECT,
    PERMANENT_REDIRECT_CODE,
    TEMPORAL_REDIRECT_CODE,
    LIMIT_STATUS_CODE,
    APP_ROOT,
    RATE_LIMIT_RPS,
    RATE_LIMIT_BURST,
    LIMIT_CONNECTIONS,
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    AUTH_TYPE,
    AUTH_SECRET,
    AUTH_REALM,
    AUTH_SECRET_TYPE,
    PROXY_BODY_SIZE,
    USE_REGEX,
    REWRITE_TARGET,
    CLIENT_AUTH_SECRET,
    CLIENT_AUTH_VERIFY,
    CLIENT_AUTH_PASS,
    SSL_PASSTHROUGH,
    UPSTREAM_VHOST,
    REQUEST_REDIRECT,
    REQUEST_REDIRECT_CODE,
    PATH_REWRITE,
    SERVER_ALIAS,
    FROM_TO_WWW_REDIRECT,
    AUTH_URL,
    AUTH_SIGNIN,
    AUTH_RESPONSE_HEADERS,
];

/// Why an Ingress's `hawser.dev/` annotations cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnnotationError {
    #[error("annotation {annotation}: {value:?} is not {expected}")]
    Invalid {
        annotation: String,
        value: String,
        expected: Expected,
    },
    #[error(
        "annotation {annotation} is not one hawser knows (docs/annotations.md lists them); the Ingress is refused rather than served without what it asks"
    )]
    Unknown { annotation: String },
    #[error("annotations {first} and {second} cannot both be set")]
    Conflict { first: String, second: String },
    #[error(
        "annotation {annotation}: Secret {secret}: {why}; the Ingress is refused rather than served without authentication"
    )]
    Secret {
        annotation: String,
        secret: String,
        why: String,
    },
    #[error("annotation {annotation} needs {needs}")]
    Needs { annotation: String, needs: String },
}

/// The features the `hawser.dev/` annotations of an Ingress ask for, on top
/// of the defaults `settings` give (`sslRedirect`, `hsts`).
pub fn ingress_features(
    annotations: &BTreeMap<String, String>,
    settings: &Settings,
) -> Result<IngressFeatures, AnnotationError> {
    let ours: BTreeMap<&str, &str> = annotations
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(ANNOTATION_PREFIX)?, v.as_str())))
        .collect();
    for name in ours.keys() {
        if !INGRESS_ANNOTATIONS.contains(name)
            && !CORS.contains(name)
            && !super::canary::CANARY_ANNOTATIONS.contains(name)
            && !super::BACKEND_ANNOTATIONS.contains(name)
        {
            return Err(AnnotationError::Unknown {
                annotation: format!("{ANNOTATION_PREFIX}{name}"),
            });
        }
    }
    let read = Reader(&ours);
    let bool_of = |name| read.parse(name, values::boolean);

    let redirect_code = read
        .parse(SSL_REDIRECT_CODE, |v| {
            values::code(v, &REDIRECT_CODES, "one of 301, 302, 303, 307, 308")
        })?
        .unwrap_or(308);
    let https_redirect = bool_of(SSL_REDIRECT)?
        .unwrap_or(settings.ssl_redirect)
        .then_some(redirect_code);

    let max_age = read
        .parse(HSTS_MAX_AGE, values::seconds)?
        .unwrap_or(31_536_000);
    let include_subdomains = bool_of(HSTS_INCLUDE_SUBDOMAINS)?.unwrap_or(true);
    let preload = bool_of(HSTS_PRELOAD)?.unwrap_or(false);
    let hsts = bool_of(HSTS)?.unwrap_or(settings.hsts).then(|| {
        let mut value = format!("max-age={max_age}");
        if include_subdomains {
            value.push_str("; includeSubDomains");
        }
        if preload {
            value.push_str("; preload");
        }
        value
    });

    let allow = read
        .parse(ALLOWLIST, values::cidr_list)?
        .unwrap_or_default();
    let deny = read.parse(DENYLIST, values::cidr_list)?.unwrap_or_default();

    let permanent = read.parse(PERMANENT_REDIRECT, values::url)?;
    let temporal = read.parse(TEMPORAL_REDIRECT, values::url)?;
    let redirect = match (permanent, temporal) {
        (Some(_), Some(_)) => {
            return Err(AnnotationError::Conflict {
                first: format!("{ANNOTATION_PREFIX}{PERMANENT_REDIRECT}"),
                second: format!("{ANNOTATION_PREFIX}{TEMPORAL_REDIRECT}"),
            });
        }
        (Some(location), None) => Some(Redirect {
            code: redirect_code_of(&read, PERMANENT_REDIRECT_CODE)?.unwrap_or(301),
            location,
        }),
        (None, Some(location)) => Some(Redirect {
            code: redirect_code_of(&read, TEMPORAL_REDIRECT_CODE)?.unwrap_or(302),
            location,
        }),
        (None, None) => None,
    };
    for (code, needs) in [
        (PERMANENT_REDIRECT_CODE, PERMANENT_REDIRECT),
        (TEMPORAL_REDIRECT_CODE, TEMPORAL_REDIRECT),
    ] {
        if ours.contains_key(code) && !ours.contains_key(needs) {
            return Err(AnnotationError::Needs {
                annotation: format!("{ANNOTATION_PREFIX}{code}"),
                needs: format!("{ANNOTATION_PREFIX}{needs}"),
            });
        }
    }
    let app_root = read.parse(APP_ROOT, values::path)?;

    let per_client = |v: &str| values::count(v, 1..=100_000, "a whole number from 1 to 100000");
    let rate = read.parse(RATE_LIMIT_RPS, per_client)?;
    let burst = read.parse(RATE_LIMIT_BURST, |v| {
        values::count(v, 0..=1_000_000, "a whole number from 0 to 1000000")
    })?;
    let rate_limit = match (rate, burst) {
        (Some(rate), burst) => Some(rate + burst.unwrap_or(rate)),
        (None, Some(_)) => {
            return Err(AnnotationError::Needs {
                annotation: format!("{ANNOTATION_PREFIX}{RATE_LIMIT_BURST}"),
                needs: format!("{ANNOTATION_PREFIX}{RATE_LIMIT_RPS}"),
            });
        }
        (None, None) => None,
    };
    let connection_limit = read.parse(LIMIT_CONNECTIONS, per_client)?;
    let limit_status = read.parse(LIMIT_STATUS_CODE, |v| {
        values::code(v, &super::LIMIT_CODES, "one of 403, 429, 503")
    })?;
    if limit_status.is_some() && rate_limit.is_none() && connection_limit.is_none() {
        return Err(AnnotationError::Needs {
            annotation: format!("{ANNOTATION_PREFIX}{LIMIT_STATUS_CODE}"),
            needs: format!(
                "{ANNOTATION_PREFIX}{RATE_LIMIT_RPS} or {ANNOTATION_PREFIX}{LIMIT_CONNECTIONS}"
            ),
        });
    }
    let cors = super::cors::cors(&ours, &read)?;
    let canary = super::canary::canary(&read)?;
    // Backend annotations on an Ingress: checked here, applied to its own
    // backends (see `BackendKey::overrides`).
    let backend: BTreeMap<&str, &str> = ours
        .iter()
        .filter(|(name, _)| super::BACKEND_ANNOTATIONS.contains(name))
        .map(|(k, v)| (*k, *v))
        .collect();
    super::backend_features(&backend)?;
    let basic_auth = match read.parse(AUTH_TYPE, |v| {
        (v.trim() == "basic")
            .then_some(())
            .ok_or("basic (the only type in this version)")
    })? {
        Some(()) => Some(super::BasicAuth {
            secret: read
                .parse(AUTH_SECRET, super::auth::secret_name)?
                .ok_or_else(|| AnnotationError::Needs {
                    annotation: format!("{ANNOTATION_PREFIX}{AUTH_TYPE}"),
                    needs: format!("{ANNOTATION_PREFIX}{AUTH_SECRET}"),
                })?,
            realm: read
                .parse(AUTH_REALM, super::auth::realm)?
                .unwrap_or_else(|| super::auth::DEFAULT_REALM.to_string()),
            format: read
                .parse(AUTH_SECRET_TYPE, |v| match v.trim() {
                    "auth-file" => Ok(super::auth::SecretFormat::File),
                    "auth-map" => Ok(super::auth::SecretFormat::Map),
                    _ => Err("auth-file or auth-map"),
                })?
                .unwrap_or_default(),
            users: Vec::new(),
        }),
        None => {
            if let Some(name) = [AUTH_SECRET, AUTH_REALM, AUTH_SECRET_TYPE]
                .iter()
                .find(|n| ours.contains_key(**n))
            {
                return Err(AnnotationError::Needs {
                    annotation: format!("{ANNOTATION_PREFIX}{name}"),
                    needs: format!("{ANNOTATION_PREFIX}{AUTH_TYPE}: basic"),
                });
            }
            None
        }
    };
    let external_auth = match read.parse(AUTH_URL, super::external_auth::auth_url)? {
        Some(mut auth) => {
            if basic_auth.is_some() {
                return Err(AnnotationError::Conflict {
                    first: format!("{ANNOTATION_PREFIX}{AUTH_TYPE}"),
                    second: format!("{ANNOTATION_PREFIX}{AUTH_URL}"),
                });
            }
            auth.signin = read.parse(AUTH_SIGNIN, values::url)?;
            auth.response_headers = read
                .parse(AUTH_RESPONSE_HEADERS, super::external_auth::header_names)?
                .unwrap_or_default();
            Some(auth)
        }
        None => {
            if let Some(name) = [AUTH_SIGNIN, AUTH_RESPONSE_HEADERS]
                .iter()
                .find(|n| ours.contains_key(**n))
            {
                return Err(AnnotationError::Needs {
                    annotation: format!("{ANNOTATION_PREFIX}{name}"),
                    needs: format!("{ANNOTATION_PREFIX}{AUTH_URL}"),
                });
            }
            None
        }
    };
    let upstream_host = read.parse(UPSTREAM_VHOST, super::rewrites::host_and_port)?;
    let host_redirect = match read.parse(REQUEST_REDIRECT, super::rewrites::host_and_port)? {
        Some(host) => Some((
            host,
            redirect_code_of(&read, REQUEST_REDIRECT_CODE)?.unwrap_or(302),
        )),
        None => {
            if read.has(REQUEST_REDIRECT_CODE) {
                return Err(AnnotationError::Needs {
                    annotation: format!("{ANNOTATION_PREFIX}{REQUEST_REDIRECT_CODE}"),
                    needs: format!("{ANNOTATION_PREFIX}{REQUEST_REDIRECT}"),
                });
            }
            None
        }
    };
    let path_rewrites = read
        .parse(PATH_REWRITE, super::rewrites::path_rewrites)?
        .unwrap_or_default();
    if !path_rewrites.is_empty() && read.has(REWRITE_TARGET) {
        return Err(AnnotationError::Conflict {
            first: format!("{ANNOTATION_PREFIX}{REWRITE_TARGET}"),
            second: format!("{ANNOTATION_PREFIX}{PATH_REWRITE}"),
        });
    }
    let aliases = read
        .parse(SERVER_ALIAS, super::rewrites::aliases)?
        .unwrap_or_default();
    let www_redirect = bool_of(FROM_TO_WWW_REDIRECT)?.unwrap_or(false);
    let default_body_size = settings
        .body_size_limit
        .as_deref()
        .and_then(|limit| values::body_size(limit).ok())
        .flatten();
    let body_size = read
        .parse(PROXY_BODY_SIZE, values::body_size)?
        .unwrap_or(default_body_size);
    let client_auth = match read.parse(CLIENT_AUTH_SECRET, super::auth::secret_name)? {
        Some(secret) => Some(super::ClientAuth {
            secret,
            required: read
                .parse(CLIENT_AUTH_VERIFY, |v| match v.trim() {
                    "on" => Ok(true),
                    "optional" => Ok(false),
                    _ => Err("on or optional"),
                })?
                .unwrap_or(true),
            pass_certificate: bool_of(CLIENT_AUTH_PASS)?.unwrap_or(false),
            ca: None,
        }),
        None => {
            if let Some(name) = [CLIENT_AUTH_VERIFY, CLIENT_AUTH_PASS]
                .iter()
                .find(|n| ours.contains_key(**n))
            {
                return Err(AnnotationError::Needs {
                    annotation: format!("{ANNOTATION_PREFIX}{name}"),
                    needs: format!("{ANNOTATION_PREFIX}{CLIENT_AUTH_SECRET}"),
                });
            }
            None
        }
    };
    let (use_regex, regex_host_wide) = read
        .parse(USE_REGEX, |v| match v.trim() {
            "true" => Ok((true, false)),
            "false" => Ok((false, false)),
            "host" => Ok((true, true)),
            _ => Err("true, false or host (every path of the Ingress's hosts, whatever Ingress it is on, as ingress-nginx does)"),
        })?
        .unwrap_or((false, false));
    let ssl_passthrough = bool_of(SSL_PASSTHROUGH)?.unwrap_or(false);
    let rewrite_target = read.parse(REWRITE_TARGET, values::rewrite_target)?;
    let request_headers = read
        .parse(REQUEST_HEADERS, values::header_lines)?
        .unwrap_or_default();
    let response_headers = read
        .parse(RESPONSE_HEADERS, values::header_lines)?
        .unwrap_or_default();

    Ok(IngressFeatures {
        https_redirect,
        hsts,
        allow,
        deny,
        redirect,
        app_root,
        rate_limit,
        connection_limit,
        limit_status,
        cors,
        request_headers,
        response_headers,
        basic_auth,
        external_auth,
        upstream_host,
        host_redirect,
        path_rewrites,
        aliases,
        www_redirect,
        canary,
        body_size,
        use_regex,
        regex_host_wide,
        rewrite_target,
        client_auth,
        ssl_passthrough,
    })
}

/// The code of a permanent or temporary redirect (`name`), if said.
fn redirect_code_of(read: &Reader<'_>, name: &'static str) -> Result<Option<u16>, AnnotationError> {
    read.parse(name, |v| {
        values::code(v, &REDIRECT_CODES, "one of 301, 302, 303, 307, 308")
    })
}

/// The `hawser.dev/` annotations of one Ingress, by name without the prefix.
pub(super) struct Reader<'a>(pub(super) &'a BTreeMap<&'a str, &'a str>);

impl Reader<'_> {
    /// Whether `name` is set.
    pub(super) fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The value of `name` parsed by `parser`; `None` when it is not set.
    pub(super) fn parse<T>(
        &self,
        name: &'static str,
        parser: impl Fn(&str) -> Result<T, Expected>,
    ) -> Result<Option<T>, AnnotationError> {
        self.0
            .get(name)
            .map(|value| {
                parser(value).map_err(|expected| AnnotationError::Invalid {
                    annotation: format!("{ANNOTATION_PREFIX}{name}"),
                    value: value.to_string(),
                    expected,
                })
            })
            .transpose()
    }
}
