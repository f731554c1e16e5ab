//! What a user can set: the settings templates read, template overrides and
//! snippets. Read from YAML (`--config FILE` locally; the `HawserConfig`
//! resource in a cluster), defaulted field by field, validated once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::features::ForeignAnnotations;
use crate::gateway::GATEWAY_CONTROLLER;
use crate::library::{EXTENSION_POINTS, LIBRARY};
use crate::validate;

/// The controller name hawser's IngressClasses carry in `spec.controller`.
pub const INGRESS_CONTROLLER: &str = "hawser.dev/ingress-controller";

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all(deserialize = "camelCase"), deny_unknown_fields)]
pub struct RenderConfig {
    pub settings: Settings,
    pub templates: TemplateConfig,
}

/// Settings the library templates read (as `settings.<field>` in snake_case).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all(deserialize = "camelCase"), deny_unknown_fields)]
pub struct Settings {
    /// Address the frontends bind; empty binds every address.
    pub bind_address: String,
    pub http_port: u16,
    pub https_port: u16,
    /// Global `maxconn`; unset lets HAProxy derive it from the file-descriptor limit.
    pub maxconn: Option<u32>,
    pub timeouts: Timeouts,
    /// `hard-stop-after`: how long a worker told to stop (the old worker of
    /// every reload) may keep its connections before they are closed.
    pub hard_stop_after: String,
    /// `mworker-max-reloads`: how many reloads an old worker outlives before
    /// it is terminated, so at most this many old workers drain at a time.
    pub max_old_workers: u32,
    /// How many spare backends are kept declared for Services without
    /// backend settings (an eighth of that for each other shape in use), so
    /// a new Service is served without a reload (a pool that runs dry grows
    /// at the reload it then takes); 0 turns the pools off.
    pub spare_backends: u32,
    /// Where HAProxy logs, as the `log` directive's arguments.
    pub log_target: String,
    /// A custom `log-format`; HAProxy's HTTP log format when unset.
    pub log_format: Option<String>,
    /// The access log's form when `log_format` is unset: HAProxy's HTTP
    /// log line, or JSON naming the route and Service by Kubernetes names.
    pub access_log_format: AccessLogFormat,
    /// `namespace/name` of a TLS Secret served when no SNI matches; a
    /// generated self-signed certificate otherwise.
    pub default_certificate: Option<String>,
    /// The `spec.controller` of the IngressClasses hawser serves.
    pub ingress_controller: String,
    /// The `controllerName` of the GatewayClasses hawser serves.
    pub gateway_controller: String,
    /// HAProxy's runtime API socket (an absolute path, level admin), through
    /// which the agent changes servers, maps and certificates.
    pub runtime_socket: Option<String>,
    /// HAProxy's `server-state-file` (an absolute path); the agent writes it
    /// before each reload so servers keep their state across it.
    pub server_state_file: Option<String>,
    /// Port of a health listener whose `/healthz` answers 200 while this
    /// configuration serves (a bootstrap configuration answers 503 there).
    pub health_port: Option<u16>,
    /// Whether the health listener also serves HAProxy's own Prometheus
    /// exporter on `/metrics` (`haproxy_*` series; HAProxy must be built
    /// with it, as Debian's and the official images are).
    pub haproxy_metrics: bool,
    /// Whether Ingresses redirect HTTP to HTTPS on their TLS hosts unless
    /// they say otherwise (`hawser.dev/ssl-redirect`).
    pub ssl_redirect: bool,
    /// Whether HTTPS answers of Ingresses' TLS hosts carry
    /// `Strict-Transport-Security` unless they say otherwise (`hawser.dev/hsts`).
    pub hsts: bool,
    /// What an Ingress carrying another controller's annotations gets.
    pub foreign_annotations: ForeignAnnotations,
    /// Who may send the PROXY protocol to the public listeners.
    pub proxy_protocol: ProxyProtocol,
    /// The largest request body an Ingress accepts unless it says otherwise
    /// (`hawser.dev/proxy-body-size`): `8m`, `512k`, `1g` or bytes; unset or
    /// `0`: no limit.
    pub body_size_limit: Option<String>,
    /// The annotation dialects read (`hawser`, `nginx`, `haproxytech`); the
    /// annotations of one left out fall to `foreignAnnotations`.
    pub annotation_frontends: Vec<crate::features::Dialect>,
    /// `namespace/name` of a ConfigMap of TCP services (ingress-nginx's
    /// `tcp-services` form or haproxytech's): each entry a port of its own.
    pub tcp_services: Option<String>,
    /// Namespaces whose Services any Ingress may name in `hawser.dev/auth-url`
    /// (a shared oauth2-proxy, say); an Ingress may always name a Service of
    /// its own namespace.
    pub auth_service_namespaces: Vec<String>,
    /// Free-form values for your own templates and snippets (`settings.values.x`).
    pub values: BTreeMap<String, String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            bind_address: String::new(),
            http_port: 80,
            https_port: 443,
            maxconn: None,
            timeouts: Timeouts::default(),
            hard_stop_after: DEFAULT_HARD_STOP_AFTER.to_string(),
            max_old_workers: DEFAULT_MAX_OLD_WORKERS,
            spare_backends: DEFAULT_SPARE_BACKENDS,
            log_target: "stdout format raw local0".to_string(),
            log_format: None,
            access_log_format: AccessLogFormat::default(),
            default_certificate: None,
            ingress_controller: INGRESS_CONTROLLER.to_string(),
            gateway_controller: GATEWAY_CONTROLLER.to_string(),
            runtime_socket: None,
            server_state_file: None,
            health_port: None,
            haproxy_metrics: false,
            ssl_redirect: true,
            hsts: true,
            foreign_annotations: ForeignAnnotations::default(),
            body_size_limit: None,
            proxy_protocol: ProxyProtocol::default(),
            auth_service_namespaces: Vec::new(),
            tcp_services: None,
            annotation_frontends: crate::features::Dialect::ALL.to_vec(),
            values: BTreeMap::new(),
        }
    }
}

/// How long an old worker may drain unless `hardStopAfter` says otherwise.
pub const DEFAULT_HARD_STOP_AFTER: &str = "15m";
/// How many spares each backend shape keeps unless `spareBackends` says otherwise.
pub const DEFAULT_SPARE_BACKENDS: u32 = 32;
/// How many old workers may drain at a time unless `maxOldWorkers` says otherwise.
pub const DEFAULT_MAX_OLD_WORKERS: u32 = 3;
/// The most old workers `maxOldWorkers` accepts: each holds a whole
/// configuration's memory and its connections.
pub const MAX_OLD_WORKERS_LIMIT: u32 = 100;

/// The settings an agent may require of the configuration rendered for it
/// (where its sockets are, which ports its HAProxy binds).
pub const AGENT_SETTINGS: &[&str] = &[
    "bindAddress",
    "httpPort",
    "httpsPort",
    "healthPort",
    "runtimeSocket",
    "serverStateFile",
];

impl Settings {
    /// The address (`unix@<path>`) of an internal frontend's socket named
    /// `name`: in the directory of `runtime_socket`, which stays put across
    /// reloads; without one it is relative, so it lands in HAProxy's working
    /// directory (the rendered tree).
    pub fn internal_socket(&self, name: &str) -> String {
        let socket = self
            .runtime_socket
            .as_deref()
            .and_then(|runtime| std::path::Path::new(runtime).parent())
            .map_or_else(
                || name.to_string(),
                |dir| dir.join(name).display().to_string(),
            );
        format!("unix@{socket}")
    }

    /// Sets one of [`AGENT_SETTINGS`] from its text form.
    pub fn set_agent_setting(&mut self, key: &str, value: &str) -> Result<(), String> {
        let port = |value: &str| {
            value
                .parse::<u16>()
                .map_err(|_| format!("{key}: {value:?} is not a port"))
        };
        match key {
            "bindAddress" => self.bind_address = value.to_string(),
            "httpPort" => self.http_port = port(value)?,
            "httpsPort" => self.https_port = port(value)?,
            "healthPort" => self.health_port = Some(port(value)?),
            "runtimeSocket" => self.runtime_socket = Some(value.to_string()),
            "serverStateFile" => self.server_state_file = Some(value.to_string()),
            _ => {
                return Err(format!(
                    "{key} is not a setting an agent may set (one of {})",
                    AGENT_SETTINGS.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// `accessLogFormat`: what an access log line looks like.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessLogFormat {
    /// HAProxy's HTTP log line (`option httplog`).
    #[default]
    Http,
    /// One JSON object a line (`libraries/base/json_log.cfg.j2`).
    Json,
}

/// `proxyProtocol`: the PROXY protocol on the public listeners.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all(deserialize = "camelCase"), deny_unknown_fields)]
pub struct ProxyProtocol {
    /// Networks (a load balancer's) whose connections must start with a
    /// PROXY header, v1 or v2; the header's client address then counts as
    /// the client's. Empty: no PROXY protocol.
    pub trusted_sources: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all(deserialize = "camelCase"), deny_unknown_fields)]
pub struct Timeouts {
    pub connect: String,
    pub client: String,
    pub server: String,
    pub http_request: String,
    pub http_keep_alive: String,
    pub queue: String,
    pub tunnel: String,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: "5s".to_string(),
            client: "50s".to_string(),
            server: "50s".to_string(),
            http_request: "10s".to_string(),
            http_keep_alive: "5s".to_string(),
            queue: "30s".to_string(),
            tunnel: "1h".to_string(),
        }
    }
}

/// Template overrides (by library template name) and snippets (by name; a
/// snippet named `<point>-<anything>` is rendered at extension point `<point>`,
/// in name order).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, rename_all(deserialize = "camelCase"), deny_unknown_fields)]
pub struct TemplateConfig {
    pub overrides: BTreeMap<String, String>,
    pub snippets: BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config is not valid YAML for hawser: {0}")]
    Parse(String),
    #[error("config setting {field}: {reason}")]
    Invalid { field: String, reason: String },
}

impl RenderConfig {
    /// Parses and validates a config file's text. An empty file is the defaults.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let config: Option<RenderConfig> =
            serde_saphyr::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        let config = config.unwrap_or_default();
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.settings;
        let invalid = |field: &str, reason: String| ConfigError::Invalid {
            field: field.to_string(),
            reason,
        };
        if s.http_port == 0 || s.https_port == 0 || s.http_port == s.https_port {
            return Err(invalid(
                "httpPort/httpsPort",
                format!(
                    "must be two different ports, got {} and {}",
                    s.http_port, s.https_port
                ),
            ));
        }
        if let Some(port) = s.health_port
            && (port == 0 || port == s.http_port || port == s.https_port)
        {
            return Err(invalid(
                "healthPort",
                format!("{port} must be a port of its own"),
            ));
        }
        for (field, value) in [
            ("runtimeSocket", &s.runtime_socket),
            ("serverStateFile", &s.server_state_file),
        ] {
            if let Some(path) = value {
                validate::absolute_path(path).map_err(|e| invalid(field, e.into()))?;
            }
        }
        if !s.bind_address.is_empty() && s.bind_address.parse::<std::net::IpAddr>().is_err() {
            return Err(invalid(
                "bindAddress",
                format!("{:?} is not an IP address", s.bind_address),
            ));
        }
        let t = &s.timeouts;
        for (field, value) in [
            ("timeouts.connect", &t.connect),
            ("timeouts.client", &t.client),
            ("timeouts.server", &t.server),
            ("timeouts.httpRequest", &t.http_request),
            ("timeouts.httpKeepAlive", &t.http_keep_alive),
            ("timeouts.queue", &t.queue),
            ("timeouts.tunnel", &t.tunnel),
        ] {
            validate::duration("value", value).map_err(|e| invalid(field, e.into()))?;
        }
        validate::duration("value", &s.hard_stop_after)
            .map_err(|e| invalid("hardStopAfter", e.into()))?;
        if !s.proxy_protocol.trusted_sources.is_empty() {
            let list = s.proxy_protocol.trusted_sources.join(",");
            // Written into haproxy.cfg as they are: one network each, no
            // whitespace or separator around it.
            if let Some(odd) = s
                .proxy_protocol
                .trusted_sources
                .iter()
                .find(|n| n.is_empty() || n.contains(|c: char| c.is_whitespace() || c == ','))
            {
                return Err(invalid(
                    "proxyProtocol.trustedSources",
                    format!("{odd:?} is not one network (10.0.0.0/8, 2001:db8::/32)"),
                ));
            }
            crate::features::cidr_list(&list).map_err(|expected| {
                invalid(
                    "proxyProtocol.trustedSources",
                    format!("{list:?} is not {expected}"),
                )
            })?;
        }
        if let Some(name) = &s.tcp_services {
            let ok = name.split_once('/').is_some_and(|(ns, n)| {
                validate::label_name("namespace", ns).is_ok()
                    && validate::subdomain_name("name", n).is_ok()
            });
            if !ok {
                return Err(invalid(
                    "tcpServices",
                    format!("{name:?} is not <namespace>/<name> of a ConfigMap"),
                ));
            }
        }
        for namespace in &s.auth_service_namespaces {
            validate::label_name("namespace", namespace)
                .map_err(|e| invalid("authServiceNamespaces", e.to_string()))?;
        }
        if let Some(limit) = &s.body_size_limit {
            crate::features::body_size(limit).map_err(|expected| {
                invalid("bodySizeLimit", format!("{limit:?} is not {expected}"))
            })?;
        }
        if s.hard_stop_after
            .bytes()
            .all(|b| !b.is_ascii_digit() || b == b'0')
        {
            return Err(invalid(
                "hardStopAfter",
                format!(
                    "{:?} must be longer than zero: an old worker would lose its connections at every reload",
                    s.hard_stop_after
                ),
            ));
        }
        if s.max_old_workers > MAX_OLD_WORKERS_LIMIT {
            return Err(invalid(
                "maxOldWorkers",
                format!(
                    "{} is more than {MAX_OLD_WORKERS_LIMIT}: each old worker holds a whole configuration in memory",
                    s.max_old_workers
                ),
            ));
        }
        if s.spare_backends > crate::MAX_SPARES {
            return Err(invalid(
                "spareBackends",
                format!(
                    "{} is more than {}: each spare is a backend HAProxy keeps in memory",
                    s.spare_backends,
                    crate::MAX_SPARES
                ),
            ));
        }
        for (field, value) in [
            ("logTarget", Some(&s.log_target)),
            ("logFormat", s.log_format.as_ref()),
        ] {
            if let Some(value) = value
                && value.chars().any(|c| c.is_control())
            {
                return Err(invalid(field, "must be one line".to_string()));
            }
        }
        if let Some(cert) = &s.default_certificate {
            let ok = cert.split_once('/').is_some_and(|(ns, name)| {
                validate::label_name("namespace", ns).is_ok()
                    && validate::subdomain_name("name", name).is_ok()
            });
            if !ok {
                return Err(invalid(
                    "defaultCertificate",
                    format!("{cert:?} is not namespace/name"),
                ));
            }
        }
        for name in self.templates.overrides.keys() {
            if !LIBRARY.iter().any(|(library_name, _)| library_name == name) {
                let known: Vec<&str> = LIBRARY.iter().map(|(n, _)| *n).collect();
                return Err(invalid(
                    "templates.overrides",
                    format!(
                        "{name:?} is no library template; these are: {}",
                        known.join(", ")
                    ),
                ));
            }
        }
        for name in self.templates.snippets.keys() {
            let point_ok = EXTENSION_POINTS.iter().any(|p| {
                name.strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with('-'))
            });
            if !point_ok {
                return Err(invalid(
                    "templates.snippets",
                    format!(
                        "{name:?} must start with an extension point and '-': {}",
                        EXTENSION_POINTS.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_config_is_the_defaults() {
        assert_eq!(
            RenderConfig::from_yaml("").expect("empty"),
            RenderConfig::default()
        );
    }

    #[test]
    fn partial_settings_keep_other_defaults() {
        let config =
            RenderConfig::from_yaml("settings:\n  httpPort: 8080\n  timeouts:\n    server: 2m\n")
                .expect("valid");
        assert_eq!(config.settings.http_port, 8080);
        assert_eq!(config.settings.https_port, 443);
        assert_eq!(config.settings.timeouts.server, "2m");
        assert_eq!(config.settings.timeouts.client, "50s");
    }

    #[test]
    fn old_workers_are_bounded_by_default() {
        let settings = RenderConfig::default().settings;
        assert_eq!(settings.hard_stop_after, "15m");
        assert_eq!(settings.max_old_workers, 3);
        let config =
            RenderConfig::from_yaml("settings:\n  hardStopAfter: 30s\n  maxOldWorkers: 0\n")
                .expect("valid");
        assert_eq!(config.settings.hard_stop_after, "30s");
        assert_eq!(config.settings.max_old_workers, 0);
    }

    #[test]
    fn bad_values_are_named() {
        for (yaml, needle) in [
            ("settings:\n  httpPort: 443\n", "httpPort"),
            (
                "settings:\n  timeouts:\n    client: \"5s\\nbind :1\"\n",
                "timeouts.client",
            ),
            ("settings:\n  logFormat: \"a\\nb\"\n", "logFormat"),
            (
                "settings:\n  defaultCertificate: nope\n",
                "defaultCertificate",
            ),
            ("settings:\n  nosuch: 1\n", "nosuch"),
            ("settings:\n  hardStopAfter: 10x\n", "hardStopAfter"),
            ("settings:\n  hardStopAfter: 0s\n", "hardStopAfter"),
            ("settings:\n  maxOldWorkers: 101\n", "maxOldWorkers"),
            ("settings:\n  maxOldWorkers: -1\n", "maxOldWorkers"),
            ("templates:\n  overrides:\n    nope.j2: x\n", "nope.j2"),
            ("templates:\n  snippets:\n    misc: x\n", "misc"),
        ] {
            let err = RenderConfig::from_yaml(yaml).expect_err(yaml).to_string();
            assert!(err.contains(needle), "{yaml}: {err}");
        }
    }
}
