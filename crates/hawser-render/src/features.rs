//! Ingress features: what an Ingress asks of its routes beyond where they
//! go (HTTPS redirects, HSTS, source allow- and deny-lists, redirects), as
//! one typed model that annotation dialects feed and the `ingress` library
//! templates read.
//!
//! ```text
//!  Ingress annotations ──hawser.dev/* (annotations)──► IngressFeatures ──► feature sets ──► maps + access lists
//!                      ──other dialects (foreign)───► refused / warned / ignored   (per route: `<backend>@<id>`)
//! ```
//!
//! A route of an Ingress with features carries a feature-set id in its
//! routes-map value (`<backend>@<namespace>/<name>`, or `…:tls` for routes
//! whose host is one of the Ingress's TLS hosts; then `@<index>` when the
//! Ingress rewrites paths). Every feature value lives in a map keyed by that
//! id (or, for source ranges, in a map of its own), so changing a value is a
//! runtime map change; access lists, basic auth, client certificates,
//! rewrites and passthrough hosts are lines or sections of haproxy.cfg.
//! `docs/annotations.md` lists which changes reload.

mod annotations;
mod auth;
mod backend;
mod canary;
mod cors;
mod dialects;
mod external_auth;
mod foreign;
mod maps;
mod rewrites;
mod values;

use std::collections::BTreeMap;

pub use annotations::{
    ANNOTATION_PREFIX, AUTH_SECRET_ANNOTATION, AnnotationError, CLIENT_AUTH_SECRET_ANNOTATION,
    ingress_features,
};
pub use auth::{BasicAuth, missing_users, resolve_client_ca, resolve_users};
pub use backend::{
    BACKEND_ANNOTATIONS, BACKEND_CA_SECRET_ANNOTATION, BACKEND_PROTOCOL_ANNOTATION,
    BackendFeatures, BackendProtocol, backend_features,
};
pub use canary::Canary;
pub use cors::{CORS_DEFAULT_HEADERS, CORS_DEFAULT_METHODS};
pub use dialects::{
    Annotations, Dialect, DialectError, Target, Verdict, explain, named_secrets, read_annotations,
};
pub use external_auth::{ExternalAuth, check_namespace};
pub use foreign::{ForeignAnnotations, foreign_annotations, is_security};
pub use maps::LIMITS_TABLE;
pub(crate) use maps::{FeatureView, feature_maps};
pub use rewrites::PathRewrite;
pub use values::Cidr;
pub use values::{body_size, cidr_list};

/// The redirect codes an HTTPS redirect may use.
pub const REDIRECT_CODES: [u16; 5] = [301, 302, 303, 307, 308];
/// The statuses a request over a rate or connection limit may get: 429
/// (hawser's), 503 (ingress-nginx's) and 403 (haproxytech's).
pub const LIMIT_CODES: [u16; 3] = [403, 429, 503];

/// What one Ingress asks of every rule and path it has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngressFeatures {
    /// HTTP → HTTPS redirect code for its TLS hosts; `None`: no redirect.
    pub https_redirect: Option<u16>,
    /// The `Strict-Transport-Security` value for HTTPS answers of its TLS
    /// hosts; `None`: not sent.
    pub hsts: Option<String>,
    /// Clients allowed (empty: every client).
    pub allow: Vec<Cidr>,
    /// Clients refused (403), checked after the allow-list.
    pub deny: Vec<Cidr>,
    /// Every request redirected elsewhere.
    pub redirect: Option<Redirect>,
    /// Where `/` redirects (302).
    pub app_root: Option<String>,
    /// Requests a client may send within any one second (the rate and its
    /// burst); more get 429.
    pub rate_limit: Option<u64>,
    /// Requests a client may have in flight at once; more get 429.
    pub connection_limit: Option<u64>,
    /// The status over either limit instead of 429.
    pub limit_status: Option<u16>,
    /// Cross-origin requests browsers may make.
    pub cors: Option<Cors>,
    /// Headers set on the request to the backend, by lowercase name.
    pub request_headers: BTreeMap<String, String>,
    /// Headers set on the answer to the client, by lowercase name.
    pub response_headers: BTreeMap<String, String>,
    /// Requests without valid credentials get 401.
    pub basic_auth: Option<BasicAuth>,
    /// An auth service decides on every request.
    pub external_auth: Option<ExternalAuth>,
    /// The Host the pods see (`upstream-vhost`).
    pub upstream_host: Option<String>,
    /// Every request sent on, the same, to another host (`request-redirect`):
    /// the host (with its port or not) and the code.
    pub host_redirect: Option<(String, u16)>,
    /// Rewrites of the request path, in order (`path-rewrite`).
    pub path_rewrites: Vec<PathRewrite>,
    /// More hosts for its rules (`server-alias`).
    pub aliases: Vec<String>,
    /// `www.<host>` redirects to `<host>`, or `<host>` to `www.<host>`,
    /// where no Ingress serves that other name (`from-to-www-redirect`).
    pub www_redirect: bool,
    /// The Ingress is a canary: it takes a share of the requests of the
    /// routes another Ingress serves (its own route features do not apply).
    pub canary: Option<Canary>,
    /// The largest request body accepted, in bytes (413 above).
    pub body_size: Option<u64>,
    /// The Ingress's paths are PCRE2 regular expressions, matched
    /// case-insensitively from the start of the request path.
    pub use_regex: bool,
    /// Every path of its hosts is matched as a regular expression, whatever
    /// Ingress it is on (`use-regex: host`, ingress-nginx's rule).
    pub regex_host_wide: bool,
    /// Clients of its TLS hosts show a certificate its CA verifies.
    pub client_auth: Option<ClientAuth>,
    /// Its TLS hosts' connections go whole to the backend, by SNI.
    pub ssl_passthrough: bool,
    /// The path a matching request is sent on with, as HAProxy's
    /// `replace-path` format (`\1` for a capture of the path).
    pub rewrite_target: Option<String>,
}

/// What the `client-auth-*` annotations ask of an Ingress's clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAuth {
    /// The Secret (key `ca.crt`) in the Ingress's namespace.
    pub secret: String,
    /// `on`: a request without a certificate gets 400; `optional`: it
    /// passes, and a certificate shown must still verify.
    pub required: bool,
    /// The certificate (DER, base64) in the request header `ssl-client-cert`.
    pub pass_certificate: bool,
    /// Where the CA is written, and its PEM, once read from the store.
    pub ca: Option<(String, Vec<u8>)>,
}

/// What `enable-cors` and the `cors-*` annotations allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cors {
    /// Origins allowed (`scheme://host[:port]`), or `*` alone for any.
    pub origins: Vec<String>,
    /// `Access-Control-Allow-Methods`.
    pub methods: String,
    /// `Access-Control-Allow-Headers`.
    pub headers: String,
    /// `Access-Control-Expose-Headers`, if any.
    pub expose: Option<String>,
    /// `Access-Control-Allow-Credentials: true`.
    pub credentials: bool,
    /// `Access-Control-Max-Age` in seconds.
    pub max_age: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// 301 (permanent) or 302 (temporary) unless said.
    pub code: u16,
    pub location: String,
}

impl IngressFeatures {
    /// Features that hold on every route of the Ingress.
    fn common(&self) -> bool {
        !self.allow.is_empty()
            || !self.deny.is_empty()
            || self.redirect.is_some()
            || self.app_root.is_some()
            || self.rate_limit.is_some()
            || self.connection_limit.is_some()
            || self.cors.is_some()
            || !self.request_headers.is_empty()
            || !self.response_headers.is_empty()
            || self.basic_auth.is_some()
            || self.external_auth.is_some()
            || self.body_size.is_some()
            || self.rewrite_target.is_some()
            || self.client_auth.is_some()
            || self.upstream_host.is_some()
            || self.host_redirect.is_some()
            || !self.path_rewrites.is_empty()
    }

    /// Features that hold only on routes of its TLS hosts.
    fn tls_only(&self) -> bool {
        self.https_redirect.is_some() || self.hsts.is_some()
    }

    /// The feature-set id a route of this Ingress carries (`key` is the
    /// Ingress's `namespace/name`), `None` when no feature applies to it.
    pub(crate) fn set_id(&self, key: &str, tls_host: bool) -> Option<String> {
        if tls_host && self.tls_only() {
            Some(format!("{key}:tls"))
        } else if self.common() {
            Some(key.to_string())
        } else {
            None
        }
    }
}

/// The features an Ingress's annotations (read through the enabled
/// dialects) give it under `settings`, less those that hold only on TLS
/// hosts when none of its rules is for one of its TLS hosts; with the
/// annotations as read. `Err` names the annotation the user wrote.
pub fn effective_features<'a>(
    ingress: &'a hawser_model::Ingress,
    settings: &crate::config::Settings,
) -> Result<(IngressFeatures, Annotations<'a>), String> {
    effective_features_with(ingress, settings, &mut PlainFeatures::default())
}

/// The features an Ingress with none of hawser's annotations (as read,
/// through the dialects) gets, made once for many: most Ingresses have
/// none, and [`ingress_features`] is a function of those annotations and
/// the settings alone. One is made for one set of settings (a routing
/// table makes its own).
#[derive(Default)]
pub(crate) struct PlainFeatures(Option<IngressFeatures>);

/// [`effective_features`], with the features of Ingresses with none of
/// hawser's annotations taken from `plain` once made.
pub(crate) fn effective_features_with<'a>(
    ingress: &'a hawser_model::Ingress,
    settings: &crate::config::Settings,
    plain: &mut PlainFeatures,
) -> Result<(IngressFeatures, Annotations<'a>), String> {
    let read = read_annotations(
        &ingress.annotations,
        Target::Ingress,
        &ingress.key.namespace,
        &settings.annotation_frontends,
        settings.foreign_annotations,
    )
    .map_err(|e| e.to_string())?;
    let of_annotations =
        || ingress_features(&read.map, settings).map_err(|e| read.in_their_words(e.to_string()));
    let ours = read
        .map
        .keys()
        .any(|key| key.starts_with(ANNOTATION_PREFIX));
    let mut features = if ours {
        of_annotations()?
    } else if let Some(features) = &plain.0 {
        features.clone()
    } else {
        plain.0.insert(of_annotations()?).clone()
    };
    let serves_a_tls_host = ingress
        .rules
        .iter()
        .any(|rule| is_tls_host(rule.host.as_deref().unwrap_or_default(), ingress));
    if !serves_a_tls_host {
        features.https_redirect = None;
        features.hsts = None;
    }
    Ok((features, read))
}

impl IngressFeatures {
    /// One line per feature, as `hawser status` shows them.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(code) = self.https_redirect {
            lines.push(format!("HTTPS redirect ({code}) on its TLS hosts"));
        }
        if let Some(hsts) = &self.hsts {
            lines.push(format!(
                "Strict-Transport-Security: {hsts} on its TLS hosts"
            ));
        }
        let networks = |list: &[Cidr]| {
            list.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.allow.is_empty() {
            lines.push(format!("allows only {}", networks(&self.allow)));
        }
        if let Some(client) = &self.client_auth {
            lines.push(format!(
                "client certificates {} (CA of Secret {}){}",
                if client.required {
                    "required"
                } else {
                    "optional"
                },
                client.secret,
                if client.pass_certificate {
                    ", passed on in ssl-client-cert"
                } else {
                    ""
                }
            ));
        }
        if let Some(auth) = &self.basic_auth {
            lines.push(format!(
                "basic authentication (users of Secret {}, realm {:?})",
                auth.secret, auth.realm
            ));
        }
        if let Some(canary) = &self.canary {
            let mut ways = Vec::new();
            if let Some(header) = &canary.header {
                let value = canary.header_value.as_deref().unwrap_or("always");
                ways.push(format!("header {header}: {value}"));
            }
            if let Some(cookie) = &canary.cookie {
                ways.push(format!("cookie {cookie}=always"));
            }
            ways.push(format!("{} in {} of the rest", canary.weight, canary.total));
            lines.push(format!(
                "canary of the Ingress serving its routes: {}",
                ways.join(", then ")
            ));
        }
        if let Some(auth) = &self.external_auth {
            let mut line = format!("external authentication by {}", auth.url);
            if let Some(signin) = &auth.signin {
                line.push_str(&format!(", sign-in at {signin}"));
            }
            if !auth.response_headers.is_empty() {
                line.push_str(&format!(
                    ", passing on {}",
                    auth.response_headers.join(", ")
                ));
            }
            lines.push(line);
        }
        if !self.deny.is_empty() {
            lines.push(format!("denies {}", networks(&self.deny)));
        }
        if let Some(limit) = self.rate_limit {
            lines.push(format!("{limit} requests a second per client"));
        }
        if let Some(limit) = self.body_size {
            lines.push(format!("request bodies up to {limit} bytes"));
        }
        if let Some(limit) = self.connection_limit {
            lines.push(format!("{limit} requests in flight per client"));
        }
        if let Some(code) = self.limit_status {
            lines.push(format!("over a limit: {code}"));
        }
        if let Some(cors) = &self.cors {
            lines.push(format!("CORS for {}", cors.origins.join(", ")));
        }
        if let Some(redirect) = &self.redirect {
            lines.push(format!(
                "every request redirected ({}) to {}",
                redirect.code, redirect.location
            ));
        }
        if self.ssl_passthrough {
            lines.push("TLS hosts passed through to the backend by SNI".to_string());
        }
        if self.use_regex {
            lines.push("paths are regular expressions".to_string());
        }
        if let Some(target) = &self.rewrite_target {
            lines.push(format!("paths rewritten to {target}"));
        }
        if let Some(host) = &self.upstream_host {
            lines.push(format!("the pods see Host {host}"));
        }
        if let Some((host, code)) = &self.host_redirect {
            lines.push(format!("every request redirected ({code}) to host {host}"));
        }
        for rule in &self.path_rewrites {
            lines.push(format!(
                "paths matching {} rewritten to {}",
                rule.regex, rule.target
            ));
        }
        if self.www_redirect {
            lines.push(
                "the www. name of its hosts (or the name without it) redirected (308) to them"
                    .to_string(),
            );
        }
        if !self.aliases.is_empty() {
            lines.push(format!("its rules also serve {}", self.aliases.join(", ")));
        }
        if let Some(root) = &self.app_root {
            lines.push(format!("/ redirected (302) to {root}"));
        }
        for (name, value) in &self.request_headers {
            lines.push(format!("request header {name}: {value}"));
        }
        for (name, value) in &self.response_headers {
            lines.push(format!("response header {name}: {value}"));
        }
        lines
    }
}

/// Whether `route_host` (empty: any host) is one of `ingress`'s TLS hosts
/// (its `tls[].hosts`, which may hold one-label wildcards).
pub fn is_tls_host(route_host: &str, ingress: &hawser_model::Ingress) -> bool {
    let mut tls_hosts = ingress.tls.iter().flat_map(|tls| &tls.hosts);
    !route_host.is_empty()
        && tls_hosts.any(|tls| {
            tls == route_host
                || tls.strip_prefix("*.").is_some_and(|parent| {
                    route_host
                        .split_once('.')
                        .is_some_and(|(label, rest)| label != "*" && rest == parent)
                })
        })
}

/// Each Ingress's features by `namespace/name`, for the routes it owns.
pub(crate) type FeaturesByIngress = BTreeMap<String, IngressFeatures>;

#[cfg(test)]
mod tests;
