//! One render: store in, file set + plan + diagnostics out.

use hawser_model::{Kind, ObjectKey, ObjectRef, Store};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use minijinja::Environment;

use crate::backends::{BackendKey, BackendReuse, KeptBackends};
use crate::config::{ConfigError, RenderConfig, Settings};
use crate::features;
use crate::gateway::{self, GatewayStatus, GatewayTable};
use crate::gateway_frontends::{self, GatewayView};
use crate::ingress::{KeptRoutes, KeptRouting, RouteTable, TlsUse};
use crate::library::ENTRY_TEMPLATE;
use crate::report::{Diagnostic, Diagnostics};
use crate::tls::{self, CertificatePem, DefaultCertificate, ServedCertificates};
use crate::{backends, engine, pools};
use hawser_plan::{
    BackendMode, BackendPlan, FileKind, FileSet, MapEntry, MapPlan, Plan, ROUTES_TWIN_MAP_PATH,
    SPARES_MAP_PATH,
};
pub use hawser_plan::{CONFIG_PATH, ROUTES_MAP_PATH};

pub use crate::route_key::ROUTE_KEY_END;
use memo::ConfigMemo;
use reads::ContextReads;
use writer::{ConfigWriter, ContextRest, Routing, Tls};

mod digest;
mod lazy_backends;
mod memo;
mod reads;
mod writer;

#[cfg(test)]
mod tests;

/// The ACL conditions of the response classes of
/// [`hawser_plan::RESPONSE_CLASSES`], in the same order.
const RESPONSE_CLASS_CONDITIONS: [&str; hawser_plan::RESPONSE_CLASSES.len()] = [
    " { status ge 100 } { status lt 200 }",
    " { status ge 200 } { status lt 300 }",
    " { status ge 300 } { status lt 400 }",
    " { status ge 400 } { status lt 500 }",
    " { status ge 500 } { status lt 600 }",
    " !{ status ge 100 } || { var(txn.route_owner) -m found } { status ge 600 }",
];

/// Answers 404 when no route and no default backend matches.
pub const NOT_FOUND_BACKEND: &str = "hawser_not_found";

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("template {template}{}: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Template {
        template: String,
        line: Option<usize>,
        message: String,
    },
    #[error("cannot generate the default certificate: {0}")]
    DefaultCertificate(String),
}

impl From<minijinja::Error> for RenderError {
    fn from(err: minijinja::Error) -> Self {
        let mut message = err
            .detail()
            .map_or_else(|| err.kind().to_string(), str::to_string);
        let mut source = std::error::Error::source(&err);
        while let Some(inner) = source {
            message.push_str(": ");
            message.push_str(&inner.to_string());
            source = inner.source();
        }
        RenderError::Template {
            template: err.name().unwrap_or(ENTRY_TEMPLATE).to_string(),
            line: err.line(),
            message,
        }
    }
}

/// The result of a render: what to write, what it means, what was wrong.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// Shared with whoever applies it (the in-process agent), not copied.
    pub files: Arc<FileSet>,
    pub plan: Arc<Plan>,
    /// Rejected, ignored and warned-about objects, sorted.
    pub diagnostics: Vec<Diagnostic>,
    /// The configuration it was rendered under: whoever renders the same
    /// store again (for another agent's settings, or a dry run) uses it.
    pub config: Arc<RenderConfig>,
    /// The Gateway API status this render's objects earn (what a cluster
    /// writes on GatewayClasses, Gateways and routes).
    pub gateway_status: Arc<GatewayStatus>,
    /// The Secrets served as certificates, by `namespace/name`: their
    /// expiry, hosts and the warnings their checks gave.
    pub served_certificates: Arc<ServedCertificates>,
}

/// Holds the compiled templates and the generated default certificate, so
/// that renders of the same store are byte-identical.
#[derive(Debug)]
pub struct Renderer {
    config: Arc<RenderConfig>,
    env: Environment<'static>,
    default_certificate: CertificatePem,
    /// Where the default certificate came from, for the plan.
    default_source: &'static str,
    /// The time certificates are checked against; none: the system clock,
    /// read once per render. Only warnings depend on it, never the files
    /// or the plan.
    fixed_time: Option<SystemTime>,
    /// The parts of the template context some template reads.
    reads: ContextReads,
    /// The last haproxy.cfg written, reused by a render with the same
    /// template context.
    memo: ConfigMemo,
    /// The backend plans of the last render, reused by one whose Service
    /// and EndpointSlices are the same.
    kept_backends: KeptBackends,
    /// The routing table of the last render, patched by the next one when
    /// few Ingresses changed.
    kept_routes: KeptRoutes,
}

impl Renderer {
    /// Validates the configuration and compiles the templates; a template
    /// that does not parse fails here, before any render.
    pub fn new(config: RenderConfig) -> Result<Self, RenderError> {
        config.validate()?;
        let env = engine::environment(&config.templates)?;
        let default_certificate =
            tls::generate_default_certificate().map_err(RenderError::DefaultCertificate)?;
        Ok(Renderer {
            config: Arc::new(config),
            reads: ContextReads::of(&env),
            env,
            default_certificate,
            default_source: "generated",
            fixed_time: None,
            memo: ConfigMemo::default(),
            kept_backends: KeptBackends::default(),
            kept_routes: KeptRoutes::default(),
        })
    }

    /// Checks certificates as if it were `now` (tests shift the clock
    /// with it), instead of reading the system clock at each render.
    pub fn at_time(mut self, now: SystemTime) -> Self {
        self.fixed_time = Some(now);
        self
    }

    /// Serves this certificate when no SNI matches, instead of a generated one
    /// (unless `settings.defaultCertificate` names a Secret).
    pub fn with_default_certificate(mut self, pem: CertificatePem) -> Self {
        self.default_certificate = pem;
        self.default_source = "given";
        self
    }

    /// The configuration this renderer renders under.
    pub fn config(&self) -> &Arc<RenderConfig> {
        &self.config
    }

    /// Renders `store` from scratch: every Service has its own backend,
    /// every pool of spares is full (see [`Renderer::render_after`]).
    pub fn render(&self, store: &Store) -> Result<Rendered, RenderError> {
        self.render_after(store, None)
    }

    /// Renders `store` as the version after `previous` (the plan of the
    /// last render handed on): when only Services and servers changed, it
    /// declares the same backends, a new Service served from a spare, so the
    /// change needs no reload (see the `pools` module).
    ///
    /// What the renderer kept of its last render (haproxy.cfg, backend
    /// plans) is reused where what it was made of is unchanged; the result
    /// is the one a new renderer renders.
    pub fn render_after(
        &self,
        store: &Store,
        previous: Option<&Plan>,
    ) -> Result<Rendered, RenderError> {
        let settings = &self.config.settings;
        let mut diags = Diagnostics::default();
        let mut files = FileSet::default();

        let routing = self.kept_routes.route_table(store, settings);
        let routes = &routing.table;
        diags.extend(&routing.reported);
        let (gateway_table, mut gateway_status) =
            gateway::gateway_table(store, &settings.gateway_controller, &mut diags);
        let mut gateway_view = gateway_frontends::gateway_view(
            &gateway_table,
            &routes.passthrough,
            settings,
            &mut diags,
        );
        for unserved in &gateway_view.unserved {
            gateway_status.mark_unserved(&unserved.gateway, &unserved.listener, &unserved.message);
        }
        let reserved: std::collections::BTreeSet<u16> = [
            Some(settings.http_port),
            Some(settings.https_port),
            settings.health_port,
        ]
        .into_iter()
        .flatten()
        .chain(gateway_view.frontends.iter().map(|f| f.port))
        .chain(gateway_view.streams.iter().map(|s| s.port))
        .collect();
        let (tcp_services, tcp_service_backends) = crate::tcp_services::tcp_services(
            store,
            settings,
            &reserved,
            gateway_frontends::TCP_SUFFIX,
            &mut diags,
        );
        let mut ca_files = routes.ca_files.clone();
        let backends = self.backends(
            store,
            &routing,
            &gateway_table,
            &gateway_view,
            tcp_service_backends,
            &mut ca_files,
            &mut diags,
        );
        for (path, pem) in ca_files {
            files.insert(path, FileKind::CaFile, pem);
        }
        let tls_uses = with_listener_certificates(&routes.tls, &gateway_table);
        let mut maps = route_maps(routes, routing.routes_map.clone());
        let (canary_maps, canary_view) = crate::ingress::canary_maps(&routes.canaries);
        maps.extend(canary_maps);
        let (feature_maps, feature_view) = features::feature_maps(&routes.features, settings);
        maps.extend(feature_maps);
        maps.extend(gateway_view.map_plan.take());
        maps.push(pools::spares_map(&[]));
        maps.extend(MapPlan::live_twins(&maps));
        maps.sort_by(|a, b| a.path.cmp(&b.path));
        for map in &maps {
            let file = map.to_file();
            if let Some(twin) = &map.twin {
                files.insert(twin.clone(), FileKind::Map, file.clone());
            }
            files.insert(map.path.clone(), FileKind::Map, file);
        }
        if let Some(auth) = &feature_view.auth {
            files.insert(auth.lua, FileKind::Lua, hawser_plan::AUTH_LUA);
        }
        if gateway_view.mirror.is_some() {
            let (path, lua) = (gateway_frontends::LUA_PATH, gateway_frontends::MIRROR_LUA);
            files.insert(path, FileKind::Lua, lua);
        }
        let default_cert = self.default_certificate(store, &mut diags);
        let certificates = tls::certificates(
            store,
            &tls_uses,
            &default_cert,
            self.unix_now(),
            &mut files,
            &mut diags,
        );
        let mut plan = Plan {
            structure_digest: String::new(),
            backends: Vec::new(),
            maps,
            certificates: certificates.plans,
            crt_lists: vec![certificates.crt_list],
        };
        let default_backend = routes
            .default_backend
            .as_ref()
            .map_or(NOT_FOUND_BACKEND.to_string(), |b| b.name());
        let rest = ContextRest {
            settings,
            routing: Routing {
                map: ROUTES_MAP_PATH,
                twin_map: ROUTES_TWIN_MAP_PATH,
                live_twins_map: hawser_plan::LIVE_TWINS_MAP_PATH,
                regex_map: REGEX_ROUTES_MAP_PATH,
                www_redirect_map: WWW_REDIRECT_MAP_PATH,
                rewrites: &routes.rewrites,
                canary: canary_view,
                key_end: ROUTE_KEY_END,
                spares_map: SPARES_MAP_PATH,
                default_backend: &default_backend,
                not_found_backend: NOT_FOUND_BACKEND,
                routes_table: hawser_plan::ROUTES_TABLE,
                response_classes: &RESPONSE_CLASS_CONDITIONS,
            },
            ingress_features: &feature_view,
            gateway: &gateway_view,
            tcp_services: &tcp_services,
            tls: Tls {
                crt_list: tls::CRT_LIST_PATH,
            },
            resources: self.reads.resources.then(|| {
                store
                    .extra
                    .by_kind()
                    .map(|(kind, objects)| (kind, objects.collect()))
                    .collect()
            }),
        };
        let writer = ConfigWriter {
            template: self.env.get_template(ENTRY_TEMPLATE)?,
            rest,
            reads: self.reads,
            memo: &self.memo,
        };
        let config =
            writer.write_following(&mut plan, backends, previous, settings.spare_backends)?;
        if let Some(map) = plan.maps.iter().find(|m| m.path == SPARES_MAP_PATH) {
            files.insert(SPARES_MAP_PATH, FileKind::Map, map.to_file());
        }
        files.insert(CONFIG_PATH, FileKind::Config, config);
        self.kept_routes.keep(routing, store);
        Ok(Rendered {
            files: Arc::new(files),
            plan: Arc::new(plan),
            diagnostics: diags.finish(),
            config: Arc::clone(&self.config),
            gateway_status: Arc::new(gateway_status),
            served_certificates: Arc::new(certificates.served),
        })
    }

    /// Every backend the routes, Gateway API routes and TCP services
    /// name, sorted by name: the last render's when it declared the same
    /// (see `backends/kept.rs`), else each plan reused or made.
    #[allow(clippy::too_many_arguments, reason = "the parts of one render")]
    fn backends(
        &self,
        store: &Store,
        routing: &KeptRouting,
        gateway_table: &GatewayTable,
        gateway_view: &GatewayView,
        tcp_service_backends: BTreeMap<BackendKey, ObjectRef>,
        ca_files: &mut BTreeMap<String, Vec<u8>>,
        diags: &mut Diagnostics,
    ) -> Vec<Arc<BackendPlan>> {
        let settings = &self.config.settings;
        let routes = &routing.table;
        let mut reuse = self.kept_backends.take(store);
        let mut tcp_referenced = gateway_view.tcp_backends.clone();
        for (key, referrer) in tcp_service_backends {
            tcp_referenced.entry(key).or_insert(referrer);
        }
        // Each route's backend, and no other: one backend per key.
        let routes_alone = gateway_table.backends.is_empty()
            && gateway_view.h2_backends.is_empty()
            && tcp_referenced.is_empty();
        if let Some(backends) = reuse.all_again(routes_alone && routing.backends_kept) {
            self.kept_backends.keep(reuse, store);
            return backends;
        }
        // The Ingresses' backends, then the Gateway API routes' others.
        let referenced = routes
            .backends
            .iter()
            .map(|(key, referrers)| (key, &referrers.first))
            .chain(
                (gateway_table.backends.iter())
                    .filter(|(key, _)| !routes.backends.contains_key(key)),
            );
        let mut backends =
            backends::backend_plans(store, settings, referenced, ca_files, &mut reuse, diags);
        backends.extend(h2_backends(
            store,
            settings,
            gateway_view,
            ca_files,
            &mut reuse,
            diags,
        ));
        backends.extend(tcp_backends(
            store,
            settings,
            &tcp_referenced,
            ca_files,
            &mut reuse,
            diags,
        ));
        backends.sort_by(|a, b| a.name.cmp(&b.name));
        reuse.declared(&backends, routes_alone);
        self.kept_backends.keep(reuse, store);
        backends
    }

    /// The render's clock, in Unix seconds.
    fn unix_now(&self) -> i64 {
        let now = self.fixed_time.unwrap_or_else(SystemTime::now);
        match now.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |s| -s),
        }
    }

    fn default_certificate(&self, store: &Store, diags: &mut Diagnostics) -> DefaultCertificate {
        let generated = || DefaultCertificate {
            pem: self.default_certificate.clone(),
            source: self.default_source.to_string(),
            secret: None,
        };
        let Some(name) = &self.config.settings.default_certificate else {
            return generated();
        };
        let Some((namespace, secret)) = name.split_once('/') else {
            return generated(); // validated with the config
        };
        let secret_ref = ObjectRef::new(Kind::Secret, ObjectKey::new(namespace, secret));
        match store
            .secret(&secret_ref.key)
            .map(CertificatePem::from_secret)
        {
            Some(Ok(pem)) => DefaultCertificate {
                pem,
                source: secret_ref.to_string(),
                secret: Some(secret_ref.key),
            },
            Some(Err(reason)) => {
                diags.reject(
                    &secret_ref,
                    format!("{reason}; serving a generated default certificate"),
                );
                generated()
            }
            None => {
                diags.warn(
                    &secret_ref,
                    "settings.defaultCertificate names it but it does not exist; serving a generated default certificate",
                );
                generated()
            }
        }
    }
}

/// The h2c twins of the Service-port backends GRPCRoutes send to: the same
/// servers, spoken to over HTTP/2 in clear text.
fn h2_backends(
    store: &Store,
    settings: &Settings,
    view: &GatewayView,
    ca_files: &mut BTreeMap<String, Vec<u8>>,
    reuse: &mut BackendReuse,
    diags: &mut Diagnostics,
) -> Vec<Arc<BackendPlan>> {
    let h2 = &view.h2_backends;
    let mut plans = backends::backend_plans(store, settings, h2, ca_files, reuse, diags);
    for plan in &mut plans {
        // A copy: the plan made for the key is the HTTP/1 backend's too.
        let plan = Arc::make_mut(plan);
        plan.name.push_str(gateway_frontends::H2_SUFFIX);
        plan.source.push_str(" over HTTP/2 (h2c)");
        for server in &mut plan.servers {
            server.proto = Some("h2".to_string());
        }
    }
    plans
}

/// The `mode tcp` twins of the Service-port backends TLSRoutes, TCPRoutes
/// and TCP services send to: the same servers, given whole connections.
fn tcp_backends(
    store: &Store,
    settings: &Settings,
    referenced: &BTreeMap<crate::backends::BackendKey, ObjectRef>,
    ca_files: &mut BTreeMap<String, Vec<u8>>,
    reuse: &mut BackendReuse,
    diags: &mut Diagnostics,
) -> Vec<Arc<BackendPlan>> {
    let mut plans = backends::backend_plans(store, settings, referenced, ca_files, reuse, diags);
    for plan in &mut plans {
        let plan = Arc::make_mut(plan);
        plan.name.push_str(gateway_frontends::TCP_SUFFIX);
        plan.source.push_str(" over TCP");
        plan.mode = BackendMode::Tcp;
        // Whole connections: no cookie, and the client's own TLS goes
        // through as it is; only the PROXY protocol still applies.
        plan.cookie = None;
        for server in &mut plan.servers {
            server.proto = None;
            server.keywords.retain(|w| w.starts_with("send-proxy"));
        }
    }
    plans
}

/// HTTPS listeners' certificates join the Ingress ones in the crt-list:
/// served for the listener's hostname, or for their own names when the
/// listener has none. The Ingresses' uses are borrowed when no listener
/// has a certificate (the routing table is kept for the next render).
fn with_listener_certificates<'a>(
    ingress_uses: &'a BTreeMap<ObjectKey, TlsUse>,
    table: &GatewayTable,
) -> Cow<'a, BTreeMap<ObjectKey, TlsUse>> {
    let mut uses = Cow::Borrowed(ingress_uses);
    for entry in &table.gateways {
        let gateway = ObjectRef::new(Kind::Gateway, entry.gateway.clone());
        for listener in &entry.listeners {
            let Some(tls) = &listener.tls else { continue };
            for secret in &tls.certificates {
                let usage = uses.to_mut().entry(secret.clone()).or_default();
                match &listener.hostname {
                    Some(host) => {
                        usage.hosts.insert(host.clone());
                    }
                    None => usage.own_names = true,
                }
                usage.referrers.insert(gateway.clone());
            }
        }
    }
    uses
}

/// Exact and prefix routes in one map, `routes_map` (a crash or a reader
/// between two maps could see a mix), kept in two copies so that a change
/// of several routes is one switch of copies at runtime.
fn route_maps(routes: &RouteTable, routes_map: Vec<MapEntry>) -> Vec<MapPlan> {
    let regex: Vec<MapEntry> = routes
        .regex
        .iter()
        .map(|(key, target)| MapEntry::new(key.as_str(), target.map_value()))
        .collect();
    let mut regex_map = MapPlan::longest_first(REGEX_ROUTES_MAP_PATH, regex);
    regex_map.match_kind = hawser_plan::MatchKind::Reg;
    let www = routes
        .www_redirects
        .iter()
        .map(|(from, to)| MapEntry::new(from.as_str(), to.as_str()))
        .collect();
    let mut www_map = MapPlan::longest_first(WWW_REDIRECT_MAP_PATH, www);
    www_map.match_kind = hawser_plan::MatchKind::Str;
    vec![
        // In that order already: sorting finds one run.
        MapPlan::longest_first(ROUTES_MAP_PATH, routes_map).with_twin(ROUTES_TWIN_MAP_PATH),
        regex_map,
        www_map,
    ]
}

/// `from-to-www-redirect`: a host no route serves → the host it redirects to.
pub const WWW_REDIRECT_MAP_PATH: &str = "maps/www_redirect.map";

/// The regex routes' map: keys are `^<host>(?i:<path regex>)`.
pub use hawser_plan::REGEX_ROUTES_MAP_PATH;
