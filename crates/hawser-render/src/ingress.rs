//! The Rust half of the `ingress` library: which Ingresses are ours, and the
//! routing table their rules make, with Kubernetes' semantics.
//!
//! ```text
//!  Ingresses ──class──► owned ──validate──► routes ──precedence──► RouteTable
//!                         │         │                                (exact and prefix keys,
//!                   ignored      rejected (the whole object)          default backend, TLS)
//! ```
//!
//! Routing is expressed as one HAProxy map (`map_beg`) keyed by
//! `<host><path>`, where host is an exact host, a `*.parent` wildcard or empty
//! (any host). The table keeps two kinds of keys, written into that one map:
//!
//! - **exact** keys, for Exact paths and for every Prefix path's own text (a
//!   prefix matches itself), written with `|` appended (requests are looked up
//!   as `<host><path>|`, so they match only the whole path); an Exact path wins
//!   over a Prefix path with the same text, as the Ingress spec requires;
//! - **prefix** keys, `<host><prefix>/` for each Prefix path (and `<host>/` for
//!   `/`), so matching is element-wise: `/foo` matches `/foo` and `/foo/bar`,
//!   never `/foobar`. Entries are written longest first, so the longest match
//!   wins.
//!
//! The frontend looks up the request's exact host, then its one-label wildcard,
//! then host-less rules; then the default backend.
//! When two Ingresses claim the same host and path, the older one (then the
//! lower namespace/name) keeps it and the other gets a warning.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use hawser_model::{
    Ingress, IngressBackend, IngressTls, Kind, ObjectKey, ObjectRef, PathType, Store,
};

use crate::backends::BackendKey;
use crate::config::Settings;
use crate::features::{self, FeaturesByIngress, IngressFeatures, PlainFeatures};
use crate::report::{Diagnostics, Severity};
use crate::validate;

/// One entry of a routing map, and who put it there.
///
/// The backend name and the owner are shared by every entry of a route
/// (and the owner by every route of its Ingress): a render makes one or two
/// entries per path, and cloning their strings for each was much of its time.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub backend: Arc<str>,
    /// The feature set of the owner that holds on this route, if any.
    pub features: Option<String>,
    /// Set for entries from `pathType: Exact`, which outrank Prefix entries.
    pub exact_type: bool,
    pub owner: Arc<ObjectRef>,
    /// The route's index in its Ingress, when the Ingress rewrites paths.
    pub rewrite: Option<usize>,
    /// The canary Ingress (`namespace/name`) taking a share of the route.
    pub canary: Option<String>,
}

/// A TLS Secret as the Ingresses use it.
#[derive(Debug, Default, Clone)]
pub(crate) struct TlsUse {
    /// SNI names to serve the certificate for.
    pub hosts: BTreeSet<String>,
    /// An Ingress named the Secret without hosts: serve it for its own names.
    pub own_names: bool,
    /// Hosts whose clients are asked for a certificate, with the CA file
    /// (tree path) it is verified with.
    pub client_ca: BTreeMap<String, String>,
    pub referrers: BTreeSet<ObjectRef>,
}

#[derive(Debug, Default)]
pub(crate) struct RouteTable {
    pub exact: BTreeMap<String, Target>,
    pub prefix: BTreeMap<String, Target>,
    pub default_backend: Option<BackendKey>,
    /// Every backend a route or default backend uses, with who uses it.
    pub backends: BTreeMap<BackendKey, Referrers>,
    pub tls: BTreeMap<ObjectKey, TlsUse>,
    /// The features of each Ingress served that has any.
    pub features: FeaturesByIngress,
    /// Regex routes (`use-regex`) by their `map_reg` key.
    pub regex: BTreeMap<String, Target>,
    /// One per route of an Ingress that rewrites paths.
    pub rewrites: Vec<Rewrite>,
    /// CA files (tree path → PEM) client certificates are verified with.
    pub ca_files: BTreeMap<String, Vec<u8>>,
    /// TLS hosts passed through whole (`ssl-passthrough`), by SNI.
    pub passthrough: Vec<Passthrough>,
    /// Host → the host it redirects to (`from-to-www-redirect`), for hosts
    /// no route serves.
    pub www_redirects: BTreeMap<String, String>,
    /// Canary Ingresses by `namespace/name`: their backend and what they take.
    pub canaries: BTreeMap<String, canary::CanaryRoute>,
    /// The keys more than one route claimed, by map: who holds each
    /// depends on who else claims it.
    pub contested: BTreeSet<(RouteMap, String)>,
    /// Some served Ingress's routes depend on other Ingresses' (a canary,
    /// aliases, a www redirect, host-wide regex matching): a change of one
    /// Ingress may then change another's routes.
    pub cross_ingress: bool,
    /// Some Ingress's routes were read with Secrets (users, CA
    /// certificates) or Services (an external authentication Service's
    /// protocol): a change of those may change them.
    pub reads_secrets: bool,
    pub reads_services: bool,
}

/// Who uses a backend: the first object that asked for it (named in
/// warnings about it) and how many references there are in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Referrers {
    pub first: ObjectRef,
    pub uses: usize,
}

impl RouteTable {
    /// The keys claimed in one routing map, and their targets.
    fn claims(&self, map: RouteMap) -> &BTreeMap<String, Target> {
        match map {
            RouteMap::Exact => &self.exact,
            RouteMap::Prefix => &self.prefix,
            RouteMap::Regex => &self.regex,
        }
    }

    fn claims_mut(&mut self, map: RouteMap) -> &mut BTreeMap<String, Target> {
        match map {
            RouteMap::Exact => &mut self.exact,
            RouteMap::Prefix => &mut self.prefix,
            RouteMap::Regex => &mut self.regex,
        }
    }

    /// `object` uses `backend` once more.
    fn refer(&mut self, backend: BackendKey, object: &ObjectRef) {
        self.backends
            .entry(backend)
            .or_insert_with(|| Referrers {
                first: object.clone(),
                uses: 0,
            })
            .uses += 1;
    }
}

impl Target {
    /// The routes-map value: the backend, then `@` and the feature-set id
    /// when the route has one, `@` and the rewrite index when it rewrites,
    /// `@` and the canary when one shares it (empty fields between); then
    /// `;` and the Ingress it comes from (`Ingress/<namespace>/<name>`), which
    /// requests are counted by.
    pub fn map_value(&self) -> String {
        use std::fmt::Write;
        let features = self.features.as_deref().unwrap_or_default();
        let owner = &self.owner.key;
        // Written into one string sized ahead: there is one per map entry.
        let mut value = String::with_capacity(
            self.backend.len() + features.len() + owner.namespace.len() + owner.name.len() + 24,
        );
        value.push_str(&self.backend);
        if self.features.is_some() || self.rewrite.is_some() || self.canary.is_some() {
            value.push('@');
            value.push_str(features);
        }
        if self.rewrite.is_some() || self.canary.is_some() {
            value.push('@');
            if let Some(index) = self.rewrite {
                let _ = write!(value, "{index}");
            }
        }
        if let Some(canary) = &self.canary {
            value.push('@');
            value.push_str(canary);
        }
        value.push_str(";Ingress/");
        value.push_str(&owner.namespace);
        value.push('/');
        value.push_str(&owner.name);
        value
    }
}

/// A validated route of one Ingress, before precedence is applied.
struct Route {
    host: String,
    path: String,
    path_type: PathType,
    backend: BackendKey,
    /// Its host is one of the Ingress's TLS hosts.
    tls_host: bool,
    /// `path` is a regular expression (`use-regex`).
    regex: bool,
}

/// Builds the routing table from the Ingresses this controller owns.
pub(crate) fn route_table(
    store: &Store,
    settings: &Settings,
    diags: &mut Diagnostics,
) -> RouteTable {
    let owned = owned(store.ingresses(), store, settings, diags);
    table_of(owned, store, settings, diags)
}

/// Which of `ingresses` this controller owns, in the order their claims
/// are honoured; the others are reported as ignored.
fn owned<'a>(
    ingresses: impl Iterator<Item = &'a Ingress>,
    store: &Store,
    settings: &Settings,
    diags: &mut Diagnostics,
) -> Vec<(&'a Ingress, ObjectRef)> {
    let controller = settings.ingress_controller.as_str();
    let mut owned: Vec<(&Ingress, ObjectRef)> = Vec::new();
    let default_class = store
        .ingress_classes()
        .any(|c| c.controller == controller && c.is_default);
    for ingress in ingresses {
        let object = ObjectRef::new(Kind::Ingress, ingress.key.clone());
        match ingress.requested_class() {
            Some(class) => {
                let ours = store
                    .ingress_classes()
                    .any(|c| c.name == class && c.controller == controller);
                if ours {
                    owned.push((ingress, object));
                } else {
                    let why =
                        format!("IngressClass {class:?} is not one with controller {controller:?}");
                    diags.push(Severity::Ignored, &object, why);
                }
            }
            None if default_class => owned.push((ingress, object)),
            None => {
                let why = format!(
                    "it names no IngressClass and no IngressClass with controller {controller:?} is marked default"
                );
                diags.push(Severity::Ignored, &object, why);
            }
        }
    }
    owned.sort_by(|(a, _), (b, _)| claim_order(a, b));
    owned
}

/// Oldest first, then by namespace/name: the order in which claims are
/// honoured. An object without a creation time (a local manifest) counts
/// as newer than any that has one.
fn claim_order(a: &Ingress, b: &Ingress) -> std::cmp::Ordering {
    // Compared borrowed: cloning per comparison allocated n·log n strings.
    let (x, y) = (&a.created, &b.created);
    (x.is_none(), x.as_deref())
        .cmp(&(y.is_none(), y.as_deref()))
        .then_with(|| a.key.cmp(&b.key))
}

/// The routing table of `owned`, in the order their claims are honoured.
fn table_of(
    owned: Vec<(&Ingress, ObjectRef)>,
    store: &Store,
    settings: &Settings,
    diags: &mut Diagnostics,
) -> RouteTable {
    let mut table = RouteTable::default();
    let mut canaries = Vec::new();
    let mut aliases = Vec::new();
    let mut www = Vec::new();
    let mut regex_hosts = BTreeSet::new();
    let mut plain = PlainFeatures::default();
    for (ingress, object) in owned {
        // Shared by every map entry the Ingress makes.
        let object = Arc::new(object);
        let reads_secrets = &mut table.reads_secrets;
        let served = served_features(
            ingress,
            store,
            settings,
            &object,
            reads_secrets,
            &mut plain,
            diags,
        )
        .and_then(|(features, read)| {
            let (routes, default_backend) =
                validated_routes(ingress, &read.map, features.use_regex)
                    .map_err(|e| read.in_their_words(e))?;
            Ok((routes, default_backend, features))
        });
        match served {
            Ok((routes, default_backend, mut features)) => {
                let key = features_key(&ingress.key);
                if let Some(canary) = features.canary.take() {
                    // Shares the routes of others: attached once they are all in.
                    canaries.push((object, key, routes, canary));
                    table.cross_ingress = true;
                    continue;
                }
                if features.ssl_passthrough {
                    add_passthrough(&mut table, ingress, &routes, &object, diags);
                }
                table.cross_ingress |= features.regex_host_wide
                    || features.www_redirect
                    || !features.aliases.is_empty();
                if features.regex_host_wide {
                    regex_hosts.extend(routes.iter().map(|r| r.host.clone()));
                }
                if features.www_redirect {
                    www.push((
                        object.clone(),
                        ingress
                            .rules
                            .iter()
                            .filter_map(|r| r.host.clone())
                            .collect::<Vec<_>>(),
                    ));
                }
                if !features.aliases.is_empty() {
                    // Served once every Ingress's own hosts are in.
                    aliases.push((
                        object.clone(),
                        key.clone(),
                        alias_routes(ingress, &routes, &features.aliases),
                        features.clone(),
                    ));
                }
                add_routes(&mut table, &object, routes, &key, &features, diags);
                if let Some(auth) = &mut features.external_auth {
                    table.reads_services = true;
                    let backend = auth.backend_key(&ingress.key.namespace, store);
                    auth.backend = Some(backend.name());
                    table.refer(backend, &object);
                }
                let client_ca = features.client_auth.as_ref().and_then(|c| c.ca.clone());
                if features != IngressFeatures::default() {
                    table.features.insert(key, features);
                }
                if let Some(backend) = default_backend {
                    set_default_backend(&mut table, &object, backend, diags);
                }
                let client_ca_path = client_ca.as_ref().map(|(path, _)| path.clone());
                add_tls(&mut table, &object, ingress, client_ca_path.as_ref());
                if let Some((path, pem)) = client_ca {
                    table.ca_files.insert(path, pem);
                }
            }
            Err(reason) => diags.reject(&object, reason),
        }
    }
    for (object, key, routes, features) in aliases {
        add_alias_routes(&mut table, &object, routes, &key, &features, diags);
    }
    for (object, hosts) in www {
        add_www_redirects(&mut table, &object, hosts, diags);
    }
    for (object, key, routes, canary) in canaries {
        canary::attach(&mut table, &object, key, &routes, canary, diags);
    }
    if !regex_hosts.is_empty() {
        regex::host_wide(&mut table, &regex_hosts);
    }
    table
}

/// What an Ingress is known by in [`RouteTable::features`] (and canaries,
/// rewrites and feature sets): `namespace/name`.
fn features_key(ingress: &ObjectKey) -> String {
    format!("{}/{}", ingress.namespace, ingress.name)
}

/// Checks every host, path and backend of an Ingress; one bad value rejects it whole.
fn validated_routes(
    ingress: &Ingress,
    annotations: &BTreeMap<String, String>,
    use_regex: bool,
) -> Result<(Vec<Route>, Option<BackendKey>), String> {
    let namespace = &ingress.key.namespace;
    validate::label_name("namespace", namespace)?; // it names TLS files even without routes
    // Its name ends every route's map value and names its feature sets.
    validate::subdomain_name("name", &ingress.key.name)?;
    let mut routes = Vec::new();
    // Its backend annotations make backends of its own (see BackendKey).
    let overrides: BTreeMap<String, String> = annotations
        .iter()
        .filter(|(k, _)| {
            k.strip_prefix(features::ANNOTATION_PREFIX)
                .is_some_and(|name| features::BACKEND_ANNOTATIONS.contains(&name))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for rule in &ingress.rules {
        if let Some(host) = &rule.host {
            validate::host(host)?;
        }
        for p in &rule.paths {
            let path = match (p.path_type, p.path.as_deref()) {
                (PathType::Exact, None | Some("")) => {
                    return Err("a path of type Exact needs a path".to_string());
                }
                (_, None | Some("")) => "/".to_string(),
                (_, Some(path)) => path.to_string(),
            };
            if use_regex {
                if !path.starts_with('/') {
                    return Err(format!("path regex {path:?} must start with '/'"));
                }
                validate::regex("path regex", &path)?;
            } else {
                validate::path(&path)?;
            }
            let host = rule.host.clone().unwrap_or_default();
            routes.push(Route {
                tls_host: features::is_tls_host(&host, ingress),
                host,
                path,
                path_type: p.path_type,
                backend: backend_key(namespace, &p.backend, &overrides)?,
                regex: use_regex,
            });
        }
    }
    for tls in &ingress.tls {
        for host in &tls.hosts {
            validate::host(host).map_err(|e| format!("tls: {e}"))?;
        }
        if let Some(secret) = &tls.secret_name {
            validate::subdomain_name("tls secretName", secret)?;
        }
    }
    let default_backend = ingress
        .default_backend
        .as_ref()
        .map(|b| backend_key(namespace, b, &overrides).map_err(|e| format!("defaultBackend: {e}")))
        .transpose()?;
    Ok((routes, default_backend))
}

fn backend_key(
    namespace: &str,
    backend: &IngressBackend,
    overrides: &BTreeMap<String, String>,
) -> Result<BackendKey, String> {
    match backend {
        IngressBackend::Service { name, port } => {
            let key = BackendKey {
                namespace: namespace.to_string(),
                service: name.clone(),
                port: port.clone(),
                overrides: overrides.clone(),
            };
            key.validate()?;
            Ok(key)
        }
        IngressBackend::Resource { kind, name } => Err(format!(
            "backend resource {kind} {name:?} is not supported; hawser routes to Services"
        )),
    }
}

fn add_routes(
    table: &mut RouteTable,
    object: &Arc<ObjectRef>,
    routes: Vec<Route>,
    key: &str,
    features: &IngressFeatures,
    diags: &mut Diagnostics,
) {
    // An Ingress's paths mostly go to one backend: named once per run.
    let mut names: Vec<Arc<str>> = Vec::with_capacity(routes.len());
    for (at, route) in routes.iter().enumerate() {
        let name = match names.last() {
            Some(last) if routes[at - 1].backend == route.backend => Arc::clone(last),
            _ => route.backend.name().into(),
        };
        names.push(name);
    }
    for ((index, route), backend) in routes.into_iter().enumerate().zip(names) {
        let feature_set = features.set_id(key, route.tls_host);
        let rewrite = match (&features.rewrite_target, &feature_set) {
            (Some(target), Some(id)) => {
                table.rewrites.push(Rewrite {
                    ingress: key.to_string(),
                    id: id.clone(),
                    index,
                    regex: regex::rewrite_regex(&route.path, route.regex),
                    target: target.clone(),
                });
                Some(index)
            }
            _ => None,
        };
        let exact_type = route.path_type == PathType::Exact;
        let keys = route_keys(&route);
        table.refer(route.backend, object);
        for (map, key) in keys {
            let target = Target {
                backend: Arc::clone(&backend),
                features: feature_set.clone(),
                exact_type,
                owner: Arc::clone(object),
                rewrite,
                canary: None,
            };
            let contested = match map {
                RouteMap::Regex => claim(&mut table.regex, key, target, diags),
                RouteMap::Exact => claim_exact(&mut table.exact, key, target, diags),
                RouteMap::Prefix => claim(&mut table.prefix, key, target, diags),
            };
            if let Some(key) = contested {
                table.contested.insert((map, key));
            }
        }
    }
}

/// Which routing map an entry goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RouteMap {
    Exact,
    Prefix,
    Regex,
}

/// The map entries a route makes: a regex key; an Exact path's whole key;
/// a Prefix (or ImplementationSpecific) path's own text as an exact key and
/// its element-wise prefix key (a trailing '/' ignored).
fn route_keys(route: &Route) -> Vec<(RouteMap, String)> {
    if route.regex {
        return vec![(RouteMap::Regex, regex::regex_key(&route.host, &route.path))];
    }
    if route.path_type == PathType::Exact {
        return vec![(RouteMap::Exact, format!("{}{}", route.host, route.path))];
    }
    let prefix = route.path.trim_end_matches('/');
    let key = format!("{}{}", route.host, prefix);
    let mut keys = Vec::new();
    if !prefix.is_empty() {
        keys.push((RouteMap::Exact, key.clone()));
    }
    keys.push((RouteMap::Prefix, format!("{key}/")));
    keys
}

fn set_default_backend(
    table: &mut RouteTable,
    object: &ObjectRef,
    backend: BackendKey,
    diags: &mut Diagnostics,
) {
    if table.default_backend.is_some() {
        diags.warn(
            object,
            "defaultBackend ignored: an older Ingress already sets the default backend",
        );
        return;
    }
    table.refer(backend.clone(), object);
    table.default_backend = Some(backend);
}

/// The Ingress's TLS Secrets and hosts; `client_ca`: the CA file its hosts'
/// clients are asked for a certificate by.
fn add_tls(
    table: &mut RouteTable,
    object: &ObjectRef,
    ingress: &Ingress,
    client_ca: Option<&String>,
) {
    for tls in &ingress.tls {
        // Without a secretName, the hosts are served with the default certificate.
        let Some(secret) = &tls.secret_name else {
            continue;
        };
        let entry = table
            .tls
            .entry(ObjectKey::new(&ingress.key.namespace, secret))
            .or_default();
        add_tls_hosts(entry, tls, client_ca);
        entry.referrers.insert(object.clone());
    }
}

/// What one `tls` entry of an Ingress adds to the use of its Secret.
fn add_tls_hosts(entry: &mut TlsUse, tls: &IngressTls, client_ca: Option<&String>) {
    entry.hosts.extend(tls.hosts.iter().cloned());
    if let Some(ca) = client_ca {
        for host in &tls.hosts {
            entry.client_ca.insert(host.clone(), ca.clone());
        }
    }
    entry.own_names |= tls.hosts.is_empty();
}

mod aliases;
mod canary;
mod claims;
mod kept;
mod routes_map;
use aliases::{add_alias_routes, add_www_redirects, alias_routes};
pub(crate) use canary::{CanaryView, canary_maps};
use claims::{claim, claim_exact};
pub(crate) use kept::{KeptRoutes, Routing as KeptRouting};
mod regex;
mod served;
#[cfg(test)]
mod tests;

pub(crate) use regex::Rewrite;
use served::{add_passthrough, served_features};

use crate::gateway_frontends::Passthrough;
