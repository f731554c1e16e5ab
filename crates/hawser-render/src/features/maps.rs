//! The features of the Ingresses served, as maps the `ingress` library
//! reads and the agent changes at runtime.
//!
//! Map keys are feature-set ids (`namespace/name`, `namespace/name:tls`):
//!
//! | map | value | line in haproxy.cfg |
//! |---|---|---|
//! | `maps/https_redirect.map` | code | one per code, always there |
//! | `maps/hsts.map` | `Strict-Transport-Security` value | always there |
//! | `maps/redirect.map`, `maps/redirect_code.map` | location, code | one per code, always there |
//! | `maps/app_root.map` | path | always there |
//! | `maps/upstream_host.map` | the Host the pods see | always there |
//! | `maps/host_redirect.map`, `maps/host_redirect_code.map` | host\[:port\], code | one per code, always there |
//! | `maps/rate_limit.map`, `maps/connection_limit.map` | requests a second, requests in flight | always there |
//! | `maps/limit_status.map` | the status over a limit (429 unless said) | one per code, always there |
//! | `maps/cors_origins.map` | keyed `<id>\|<origin>` (or `<id>\|*`) | always there |
//! | `maps/cors_methods.map`, `cors_headers`, `cors_expose`, `cors_max_age`, `cors_credentials` | header values | always there |
//! | `maps/allow_<ns>_<name>.map`, `maps/deny_<ns>_<name>.map` | networks (`map_ip`) | one per Ingress with a list |
//! | `maps/auth_backend.map`, `auth_target`, `auth_signin`, `auth_headers` | external authentication | there while an Ingress asks for it |
//!
//! So a new value, or a changed one, is a map change; only an Ingress's
//! first allow- or deny-list (or its last going) adds or removes a line, and
//! external authentication adds lines (and loads its Lua) while an Ingress
//! asks for it, and lists the backends its sub-requests may go through.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{FeaturesByIngress, IngressFeatures, LIMIT_CODES, REDIRECT_CODES};
use crate::config::Settings;
use hawser_plan::{MapEntry, MapPlan, MatchKind};

/// The stick table Ingress rate and connection limits count in: a backend
/// section of its own, keyed by feature set and client address.
pub const LIMITS_TABLE: &str = "hawser_limits";
const HTTPS_REDIRECT_MAP: &str = "maps/https_redirect.map";
const HSTS_MAP: &str = "maps/hsts.map";
const REDIRECT_MAP: &str = "maps/redirect.map";
const REDIRECT_CODE_MAP: &str = "maps/redirect_code.map";
const LIMIT_STATUS_MAP: &str = "maps/limit_status.map";
const UPSTREAM_HOST_MAP: &str = "maps/upstream_host.map";
const HOST_REDIRECT_MAP: &str = "maps/host_redirect.map";
const HOST_REDIRECT_CODE_MAP: &str = "maps/host_redirect_code.map";
const APP_ROOT_MAP: &str = "maps/app_root.map";
const RATE_LIMIT_MAP: &str = "maps/rate_limit.map";
const CONNECTION_LIMIT_MAP: &str = "maps/connection_limit.map";
const CORS_ORIGINS_MAP: &str = "maps/cors_origins.map";
const BODY_SIZE_MAP: &str = "maps/body_size.map";
const CORS_METHODS_MAP: &str = "maps/cors_methods.map";
const CORS_HEADERS_MAP: &str = "maps/cors_headers.map";
const CORS_EXPOSE_MAP: &str = "maps/cors_expose.map";
const CORS_MAX_AGE_MAP: &str = "maps/cors_max_age.map";
const CORS_CREDENTIALS_MAP: &str = "maps/cors_credentials.map";
const AUTH_BACKEND_MAP: &str = "maps/auth_backend.map";
const AUTH_TARGET_MAP: &str = "maps/auth_target.map";
const AUTH_SIGNIN_MAP: &str = "maps/auth_signin.map";
const AUTH_HEADERS_MAP: &str = "maps/auth_headers.map";
/// The internal frontend external authentication's sub-requests go to.
const AUTH_SOCKET_NAME: &str = "auth.sock";

/// What the `ingress` library's feature lines read (`ingress_features`).
#[derive(Debug, Clone, Serialize)]
pub struct FeatureView {
    pub https_redirect_map: &'static str,
    pub redirect_codes: [u16; 5],
    pub hsts_map: &'static str,
    pub redirect_map: &'static str,
    pub redirect_code_map: &'static str,
    pub limit_status_map: &'static str,
    pub upstream_host_map: &'static str,
    pub host_redirect_map: &'static str,
    pub host_redirect_code_map: &'static str,
    /// One per Ingress rewriting paths with regexes (a change reloads).
    pub path_rewrites: Vec<PathRewriteLines>,
    pub limit_codes: [u16; 3],
    pub app_root_map: &'static str,
    pub rate_limit_map: &'static str,
    pub connection_limit_map: &'static str,
    pub limits_table: &'static str,
    pub body_size_map: &'static str,
    pub cors: CorsMaps,
    /// One per header name some Ingress sets on requests, in name order.
    pub request_headers: Vec<HeaderMap>,
    /// One per header name some Ingress sets on answers, in name order.
    pub response_headers: Vec<HeaderMap>,
    /// One per Ingress with an allow- or deny-list, in namespace/name order.
    pub access: Vec<AccessList>,
    /// One per Ingress with basic authentication, in namespace/name order.
    pub userlists: Vec<Userlist>,
    /// One per Ingress asking for client certificates.
    pub client_auth: Vec<ClientAuthLines>,
    /// While an Ingress asks for external authentication.
    pub auth: Option<AuthView>,
}

/// External authentication (`lua/auth.lua` and the `hawser_auth`
/// frontend): what the Lua action is given, through which maps.
#[derive(Debug, Clone, Serialize)]
pub struct AuthView {
    /// The Lua file `lua-load` loads.
    pub lua: &'static str,
    /// The internal frontend's address (`unix@<path>`), given to the Lua
    /// file as its argument and bound by the frontend.
    pub address: String,
    /// The backends sub-requests may go through, sorted.
    pub backends: Vec<String>,
    pub backend_map: &'static str,
    pub target_map: &'static str,
    pub signin_map: &'static str,
    pub headers_map: &'static str,
}

/// One Ingress's `replace-path` lines (`path-rewrite`).
#[derive(Debug, Clone, Serialize)]
pub struct PathRewriteLines {
    pub ingress: String,
    pub ids: Vec<String>,
    pub rules: Vec<super::PathRewrite>,
}

/// The lines that judge a request's client certificate (a change reloads).
#[derive(Debug, Clone, Serialize)]
pub struct ClientAuthLines {
    pub ingress: String,
    pub ids: Vec<String>,
    pub required: bool,
    pub pass_certificate: bool,
}

/// The users of one Ingress's basic authentication: a `userlist` section
/// and the line that asks for credentials (a change reloads).
#[derive(Debug, Clone, Serialize)]
pub struct Userlist {
    /// `ul_<namespace>_<name>`.
    pub name: String,
    pub ingress: String,
    pub ids: Vec<String>,
    pub realm: String,
    pub users: Vec<User>,
}

#[derive(Debug, Clone, Serialize)]
pub struct User {
    pub name: String,
    /// A crypt(3) hash of the characters `[A-Za-z0-9./$=]` (checked).
    pub hash: String,
}

/// A header some Ingresses set, and the map of its value by feature set.
#[derive(Debug, Clone, Serialize)]
pub struct HeaderMap {
    /// Lowercase; letters, digits and `-` only.
    pub name: String,
    pub map: String,
}

/// The maps CORS reads, by what they hold.
#[derive(Debug, Clone, Serialize)]
pub struct CorsMaps {
    pub origins: &'static str,
    pub methods: &'static str,
    pub headers: &'static str,
    pub expose: &'static str,
    pub max_age: &'static str,
    pub credentials: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct AccessList {
    /// The Ingress, for the `# from:` mark.
    pub ingress: String,
    /// The feature-set ids of its routes.
    pub ids: Vec<String>,
    pub allow: Option<String>,
    pub deny: Option<String>,
}

/// The feature maps of `features` (every one, empty or not), and the view
/// the templates read.
pub(crate) fn feature_maps(
    features: &FeaturesByIngress,
    settings: &Settings,
) -> (Vec<MapPlan>, FeatureView) {
    let mut https_redirect = Vec::new();
    let mut hsts = Vec::new();
    let mut redirect = Vec::new();
    let mut redirect_code = Vec::new();
    let mut limit_status = Vec::new();
    let mut upstream_host = Vec::new();
    let mut host_redirect = Vec::new();
    let mut host_redirect_code = Vec::new();
    let mut path_rewrites = Vec::new();
    let mut app_root = Vec::new();
    let mut rate_limit = Vec::new();
    let mut connection_limit = Vec::new();
    let mut body_size = Vec::new();
    let mut cors = CorsEntries::default();
    let mut request_headers: BTreeMap<String, Vec<MapEntry>> = BTreeMap::new();
    let mut response_headers: BTreeMap<String, Vec<MapEntry>> = BTreeMap::new();
    let mut access = Vec::new();
    let mut userlists = Vec::new();
    let mut client_auth = Vec::new();
    let mut ip_maps = Vec::new();
    let mut auth = AuthEntries::default();
    for (key, f) in features {
        let tls_id = format!("{key}:tls");
        let entry = |id: &str, value: String| MapEntry::new(id, value);
        if let Some(code) = f.https_redirect {
            https_redirect.push(entry(&tls_id, code.to_string()));
        }
        if let Some(value) = &f.hsts {
            hsts.push(entry(&tls_id, value.clone()));
        }
        let ids = ids_of(key, f);
        for id in &ids {
            if let Some(to) = &f.redirect {
                redirect.push(entry(id, to.location.clone()));
                redirect_code.push(entry(id, to.code.to_string()));
            }
            if let Some(code) = f.limit_status {
                limit_status.push(entry(id, code.to_string()));
            }
            if let Some(host) = &f.upstream_host {
                upstream_host.push(entry(id, host.clone()));
            }
            if let Some((host, code)) = &f.host_redirect {
                host_redirect.push(entry(id, host.clone()));
                host_redirect_code.push(entry(id, code.to_string()));
            }
            if let Some(root) = &f.app_root {
                app_root.push(entry(id, root.clone()));
            }
            if let Some(limit) = f.rate_limit {
                rate_limit.push(entry(id, limit.to_string()));
            }
            if let Some(limit) = f.connection_limit {
                connection_limit.push(entry(id, limit.to_string()));
            }
            if let Some(limit) = f.body_size {
                body_size.push(entry(id, limit.to_string()));
            }
            if let Some(c) = &f.cors {
                cors.add(id, c);
            }
            if let Some(external) = &f.external_auth {
                auth.add(id, external);
            }
            for (set, headers) in [
                (&mut request_headers, &f.request_headers),
                (&mut response_headers, &f.response_headers),
            ] {
                for (name, value) in headers {
                    set.entry(name.clone())
                        .or_default()
                        .push(entry(id, value.clone()));
                }
            }
        }
        let file = key.replace('/', "_");
        if !f.path_rewrites.is_empty() {
            path_rewrites.push(PathRewriteLines {
                ingress: key.clone(),
                ids: ids.clone(),
                rules: f.path_rewrites.clone(),
            });
        }
        if let Some(client) = &f.client_auth {
            client_auth.push(ClientAuthLines {
                ingress: key.clone(),
                ids: ids.clone(),
                required: client.required,
                pass_certificate: client.pass_certificate,
            });
        }
        if let Some(auth) = &f.basic_auth {
            userlists.push(Userlist {
                name: format!("ul_{file}"),
                ingress: key.clone(),
                ids: ids.clone(),
                realm: auth.realm.clone(),
                users: auth
                    .users
                    .iter()
                    .map(|(name, hash)| User {
                        name: name.clone(),
                        hash: hash.clone(),
                    })
                    .collect(),
            });
        }
        if f.allow.is_empty() && f.deny.is_empty() {
            continue;
        }
        let mut list = |kind: &str, networks: &[super::Cidr]| {
            (!networks.is_empty()).then(|| {
                let path = format!("maps/{kind}_{file}.map");
                let entries = networks
                    .iter()
                    .map(|n| entry(&n.to_string(), kind.to_string()))
                    .collect();
                ip_maps.push(map(&path, MatchKind::Ip, entries));
                path
            })
        };
        let allow = list("allow", &f.allow);
        let deny = list("deny", &f.deny);
        access.push(AccessList {
            ingress: key.clone(),
            ids,
            allow,
            deny,
        });
    }
    let mut maps = vec![
        map(HTTPS_REDIRECT_MAP, MatchKind::Str, https_redirect),
        map(HSTS_MAP, MatchKind::Str, hsts),
        map(REDIRECT_MAP, MatchKind::Str, redirect),
        map(REDIRECT_CODE_MAP, MatchKind::Str, redirect_code),
        map(LIMIT_STATUS_MAP, MatchKind::Str, limit_status),
        map(UPSTREAM_HOST_MAP, MatchKind::Str, upstream_host),
        map(HOST_REDIRECT_MAP, MatchKind::Str, host_redirect),
        map(HOST_REDIRECT_CODE_MAP, MatchKind::Str, host_redirect_code),
        map(APP_ROOT_MAP, MatchKind::Str, app_root),
        map(RATE_LIMIT_MAP, MatchKind::Str, rate_limit),
        map(CONNECTION_LIMIT_MAP, MatchKind::Str, connection_limit),
        map(BODY_SIZE_MAP, MatchKind::Str, body_size),
        map(CORS_ORIGINS_MAP, MatchKind::Str, cors.origins),
        map(CORS_METHODS_MAP, MatchKind::Str, cors.methods),
        map(CORS_HEADERS_MAP, MatchKind::Str, cors.headers),
        map(CORS_EXPOSE_MAP, MatchKind::Str, cors.expose),
        map(CORS_MAX_AGE_MAP, MatchKind::Str, cors.max_age),
        map(CORS_CREDENTIALS_MAP, MatchKind::Str, cors.credentials),
    ];
    let auth_view = (!auth.target.is_empty()).then(|| AuthView {
        lua: hawser_plan::AUTH_LUA_PATH,
        address: settings.internal_socket(AUTH_SOCKET_NAME),
        backends: std::mem::take(&mut auth.backends).into_iter().collect(),
        backend_map: AUTH_BACKEND_MAP,
        target_map: AUTH_TARGET_MAP,
        signin_map: AUTH_SIGNIN_MAP,
        headers_map: AUTH_HEADERS_MAP,
    });
    if auth_view.is_some() {
        maps.extend([
            map(AUTH_BACKEND_MAP, MatchKind::Str, auth.backend),
            map(AUTH_TARGET_MAP, MatchKind::Str, auth.target),
            map(AUTH_SIGNIN_MAP, MatchKind::Str, auth.signin),
            map(AUTH_HEADERS_MAP, MatchKind::Str, auth.headers),
        ]);
    }
    maps.extend(ip_maps);
    let mut header_maps = |kind: &str, headers: BTreeMap<String, Vec<MapEntry>>| {
        headers
            .into_iter()
            .map(|(name, entries)| {
                let path = format!("maps/{kind}_header_{name}.map");
                maps.push(map(&path, MatchKind::Str, entries));
                HeaderMap { name, map: path }
            })
            .collect::<Vec<_>>()
    };
    let request_headers = header_maps("request", request_headers);
    let response_headers = header_maps("response", response_headers);
    let view = FeatureView {
        https_redirect_map: HTTPS_REDIRECT_MAP,
        redirect_codes: REDIRECT_CODES,
        hsts_map: HSTS_MAP,
        redirect_map: REDIRECT_MAP,
        redirect_code_map: REDIRECT_CODE_MAP,
        limit_status_map: LIMIT_STATUS_MAP,
        upstream_host_map: UPSTREAM_HOST_MAP,
        host_redirect_map: HOST_REDIRECT_MAP,
        host_redirect_code_map: HOST_REDIRECT_CODE_MAP,
        path_rewrites,
        limit_codes: LIMIT_CODES,
        app_root_map: APP_ROOT_MAP,
        rate_limit_map: RATE_LIMIT_MAP,
        connection_limit_map: CONNECTION_LIMIT_MAP,
        limits_table: LIMITS_TABLE,
        body_size_map: BODY_SIZE_MAP,
        cors: CorsMaps {
            origins: CORS_ORIGINS_MAP,
            methods: CORS_METHODS_MAP,
            headers: CORS_HEADERS_MAP,
            expose: CORS_EXPOSE_MAP,
            max_age: CORS_MAX_AGE_MAP,
            credentials: CORS_CREDENTIALS_MAP,
        },
        request_headers,
        response_headers,
        access,
        userlists,
        client_auth,
        auth: auth_view,
    };
    (maps, view)
}

/// The entries of the CORS maps.
#[derive(Default)]
struct CorsEntries {
    origins: Vec<MapEntry>,
    methods: Vec<MapEntry>,
    headers: Vec<MapEntry>,
    expose: Vec<MapEntry>,
    max_age: Vec<MapEntry>,
    credentials: Vec<MapEntry>,
}

impl CorsEntries {
    fn add(&mut self, id: &str, cors: &super::Cors) {
        let entry = |key: String, value: &str| MapEntry::new(key, value);
        for origin in &cors.origins {
            self.origins.push(entry(format!("{id}|{origin}"), "1"));
        }
        self.methods.push(entry(id.to_string(), &cors.methods));
        self.headers.push(entry(id.to_string(), &cors.headers));
        if let Some(expose) = &cors.expose {
            self.expose.push(entry(id.to_string(), expose));
        }
        self.max_age
            .push(entry(id.to_string(), &cors.max_age.to_string()));
        if cors.credentials {
            self.credentials.push(entry(id.to_string(), "true"));
        }
    }
}

/// The entries of the external authentication maps.
#[derive(Default)]
struct AuthEntries {
    backends: std::collections::BTreeSet<String>,
    backend: Vec<MapEntry>,
    target: Vec<MapEntry>,
    signin: Vec<MapEntry>,
    headers: Vec<MapEntry>,
}

impl AuthEntries {
    fn add(&mut self, id: &str, auth: &super::ExternalAuth) {
        let entry = |value: &str| MapEntry::new(id, value);
        // Without a backend (never from the route table), the Lua action
        // finds none and the request gets 500: never a pass.
        if let Some(backend) = &auth.backend {
            self.backends.insert(backend.clone());
            self.backend.push(entry(backend));
        }
        self.target.push(entry(&auth.target));
        if let Some(signin) = &auth.signin {
            self.signin.push(entry(signin));
        }
        if !auth.response_headers.is_empty() {
            self.headers.push(entry(&auth.response_headers.join(",")));
        }
    }
}

/// Every feature-set id the routes of the Ingress `key` may carry.
fn ids_of(key: &str, features: &IngressFeatures) -> Vec<String> {
    [features.set_id(key, false), features.set_id(key, true)]
        .into_iter()
        .flatten()
        .fold(Vec::new(), |mut ids, id| {
            if !ids.contains(&id) {
                ids.push(id);
            }
            ids
        })
}

fn map(path: &str, match_kind: MatchKind, mut entries: Vec<MapEntry>) -> MapPlan {
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    MapPlan {
        path: path.to_string(),
        match_kind,
        entries,
        twin: None,
    }
}
