//! Where each file lives in a version's tree, relative to its root.
//!
//! The renderer writes these paths, the agent stages them under
//! `tree/v<generation>/` and HAProxy runs with `-C` on that directory, so the
//! same relative paths resolve in the gate's check, the agent's check and the
//! running HAProxy.

/// The HAProxy configuration.
pub const CONFIG_PATH: &str = "haproxy.cfg";
/// The one routing map: `<host><path>` → backend, matched with `map_beg`.
pub const ROUTES_MAP_PATH: &str = "maps/routes.map";
/// The second copy of [`ROUTES_MAP_PATH`] (see [`crate::MapPlan::twin`]).
pub const ROUTES_TWIN_MAP_PATH: &str = "maps/routes.twin.map";
/// Which copy of each twinned map requests read: a map's path → the path
/// of the copy read (a `str` map; on disk each map names itself).
pub const LIVE_TWINS_MAP_PATH: &str = "maps/live_twins.map";
/// The routes whose paths are regular expressions, matched with `map_reg`
/// in file order.
pub const REGEX_ROUTES_MAP_PATH: &str = "maps/routes_regex.map";
/// The Gateway API routing map.
pub const GATEWAY_MAP_PATH: &str = "maps/gateway.map";
/// The second copy of [`GATEWAY_MAP_PATH`].
pub const GATEWAY_TWIN_MAP_PATH: &str = "maps/gateway.twin.map";
/// Backends served from a spare: a Service's own backend name → the
/// spare's (see [`crate::BackendRole`]).
pub const SPARES_MAP_PATH: &str = "maps/spare_backends.map";
/// The crt-list every TLS bind reads.
pub const CRT_LIST_PATH: &str = "certs/crt-list.txt";
/// The certificate served when no other matches.
pub const DEFAULT_CERT_PATH: &str = "certs/default.pem";
/// The request mirror's Lua action (see [`crate::builtin_lua_digests`]).
pub const MIRROR_LUA_PATH: &str = "lua/mirror.lua";
/// External authentication's Lua action (see [`crate::builtin_lua_digests`]).
pub const AUTH_LUA_PATH: &str = "lua/auth.lua";
