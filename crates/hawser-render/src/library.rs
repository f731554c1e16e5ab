//! The template libraries, embedded at build time from `libraries/`.
//!
//! | library  | template              | what it writes                          |
//! |----------|-----------------------|-----------------------------------------|
//! | base     | `base/haproxy.cfg`    | global, defaults, frontend skeleton      |
//! | base     | `base/request_checks.cfg` | requests every HTTP frontend refuses |
//! | base     | `base/route_counters.cfg` | requests and responses per route   |
//! | base     | `base/json_log.cfg`   | the JSON access log's `log-format`       |
//! | ingress  | `ingress/routing.cfg` | host/path routing through maps           |
//! | backends | `backends/backends.cfg` | one backend per Service port          |
//! | backends | `backends/spares.cfg` | routes to a Service served from a spare  |
//! | ssl      | `ssl/bind.cfg`        | the HTTPS listener on the crt-list       |
//! | gateway  | `gateway/routing.cfg` | Gateway API rules in a frontend          |
//! | gateway  | `gateway/frontends.cfg` | frontends for other listener ports     |
//! | gateway  | `gateway/streams.cfg` | TLS passthrough and TCP listeners        |
//! | gateway  | `gateway/mirror.cfg`  | the frontend request mirrors send to     |
//! | ingress  | `ingress/auth.cfg`    | the frontend auth sub-requests go to     |
//! | ingress  | `ingress/tcp_services.cfg` | a frontend per TCP service port     |
//!
//! Any of them can be replaced by name through `templates.overrides`.

/// The template haproxy.cfg is rendered from.
pub const ENTRY_TEMPLATE: &str = "base/haproxy.cfg";

/// Library templates by name.
pub const LIBRARY: &[(&str, &str)] = &[
    (
        ENTRY_TEMPLATE,
        include_str!("../../../libraries/base/haproxy.cfg.j2"),
    ),
    (
        "base/request_checks.cfg",
        include_str!("../../../libraries/base/request_checks.cfg.j2"),
    ),
    (
        "base/proxy_protocol.cfg",
        include_str!("../../../libraries/base/proxy_protocol.cfg.j2"),
    ),
    (
        "base/route_counters.cfg",
        include_str!("../../../libraries/base/route_counters.cfg.j2"),
    ),
    (
        "base/json_log.cfg",
        include_str!("../../../libraries/base/json_log.cfg.j2"),
    ),
    (
        "ingress/routing.cfg",
        include_str!("../../../libraries/ingress/routing.cfg.j2"),
    ),
    (
        "ingress/features.cfg",
        include_str!("../../../libraries/ingress/features.cfg.j2"),
    ),
    (
        "ingress/tcp_services.cfg",
        include_str!("../../../libraries/ingress/tcp_services.cfg.j2"),
    ),
    (
        "ingress/auth.cfg",
        include_str!("../../../libraries/ingress/auth.cfg.j2"),
    ),
    (
        "backends/backends.cfg",
        include_str!("../../../libraries/backends/backends.cfg.j2"),
    ),
    (
        "backends/spares.cfg",
        include_str!("../../../libraries/backends/spares.cfg.j2"),
    ),
    (
        "ssl/bind.cfg",
        include_str!("../../../libraries/ssl/bind.cfg.j2"),
    ),
    (
        "gateway/routing.cfg",
        include_str!("../../../libraries/gateway/routing.cfg.j2"),
    ),
    (
        "gateway/frontends.cfg",
        include_str!("../../../libraries/gateway/frontends.cfg.j2"),
    ),
    (
        "gateway/streams.cfg",
        include_str!("../../../libraries/gateway/streams.cfg.j2"),
    ),
    (
        "gateway/mirror.cfg",
        include_str!("../../../libraries/gateway/mirror.cfg.j2"),
    ),
];

/// Where snippets go: a snippet named `<point>-<name>` is rendered at `<point>`.
pub const EXTENSION_POINTS: &[&str] = &["global", "defaults", "frontend", "sections"];
