//! The structured plan: what a render contains, stated as data.
//!
//! The agent decides between runtime API operations and a reload by comparing
//! plans, never by re-parsing HAProxy text. The renderer builds the plan first;
//! templates then write haproxy.cfg from it, and map and crt-list files are
//! written from it directly, so the plan and the files cannot disagree.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// SHA-256 of haproxy.cfg without its comments, blank lines and the
    /// server lines of the servers this plan declares. Equal digests mean
    /// two configurations differ at most in those servers, which the
    /// runtime API can change without a reload.
    pub structure_digest: String,
    /// Sorted by name. Shared: a render reuses the backends it kept from
    /// the last one, and plans are copied, without copying them.
    pub backends: Vec<Arc<BackendPlan>>,
    /// Sorted by path.
    pub maps: Vec<MapPlan>,
    /// Sorted by path.
    pub certificates: Vec<CertificatePlan>,
    pub crt_lists: Vec<CrtListPlan>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendPlan {
    /// The HAProxy backend name (`be_<namespace>_<service>_<port>`).
    pub name: String,
    /// What the backend serves, for comments and error messages
    /// (`Service app/web port 80`).
    pub source: String,
    pub balance: String,
    /// `timeout server` for this backend, when the Service sets one.
    pub timeout_server: Option<String>,
    /// `timeout connect` for this backend, when the Service sets one (a
    /// plan without it reads as none).
    #[serde(default)]
    pub timeout_connect: Option<String>,
    /// Sorted by name; names are derived from the endpoint, so they survive reorders.
    pub servers: Vec<ServerPlan>,
    /// What the backend carries: HTTP requests, or TCP connections (the twin
    /// of a Service port's backend that TLSRoutes and TCPRoutes send to).
    #[serde(default)]
    pub mode: BackendMode,
    /// Session affinity: the `cookie` line's arguments (the cookie's name
    /// and how it is set); each server then carries `cookie <its name>`.
    #[serde(default)]
    pub cookie: Option<String>,
    /// What the backend is for: serving what its name says, or a spare of a
    /// pool, free or lent to a Service (see [`BackendRole`]).
    #[serde(default, skip_serializing_if = "BackendRole::is_named")]
    pub role: BackendRole,
    /// The Service port it serves now, by its Kubernetes names: what
    /// metrics and logs call it. A spare lent to a Service names that
    /// Service; a free spare, and a backend of a plan from an older
    /// controller, name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServicePort>,
}

/// A Service port by its Kubernetes names (`port` as the route names it:
/// a number or a port name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ServicePort {
    pub namespace: String,
    pub service: String,
    pub port: String,
}

/// Spare backends let a new Service be served without a reload: HAProxy
/// 3.0 cannot add a backend at runtime, but it can add servers to one
/// declared ahead and route to it through a map. A spare has the settings
/// of the Services it may be lent to (its [`BackendShape`]); routes keep
/// naming the Service's own backend, and the spares map turns that name
/// into the spare's. At the next reload that happens anyway, every lent
/// spare becomes the Service's own backend again and the pools are full.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum BackendRole {
    /// Serves what its name says (`be_<namespace>_<service>_<port>`).
    #[default]
    Named,
    /// What it served is gone: it stays declared, empty, until the next
    /// reload, so a Service leaving needs none.
    Retired,
    /// A spare, free to be lent.
    Spare,
    /// A spare serving the backend `name` (what `source` describes).
    Lent { name: String, source: String },
    /// A spare whose Service left in this version: free from the next one,
    /// once its servers are gone, so two Services never share it.
    Released,
}

impl BackendRole {
    pub fn is_named(&self) -> bool {
        *self == BackendRole::Named
    }

    /// Whether the backend is one of a pool's spares (free or not).
    pub fn is_spare(&self) -> bool {
        matches!(
            self,
            BackendRole::Spare | BackendRole::Lent { .. } | BackendRole::Released
        )
    }

    /// The backend a spare is lent to.
    pub fn lent_to(&self) -> Option<&str> {
        match self {
            BackendRole::Lent { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// Everything about a backend but its name and servers: two backends of
/// one shape differ in haproxy.cfg only in their servers, so a spare of a
/// shape can serve any Service of that shape.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BackendShape {
    pub mode: BackendMode,
    pub balance: String,
    pub timeout_server: Option<String>,
    pub timeout_connect: Option<String>,
    pub cookie: Option<String>,
}

impl BackendPlan {
    pub fn shape(&self) -> BackendShape {
        BackendShape {
            mode: self.mode,
            balance: self.balance.clone(),
            timeout_server: self.timeout_server.clone(),
            timeout_connect: self.timeout_connect.clone(),
            cookie: self.cookie.clone(),
        }
    }

    /// Whether `other` has this backend's [`BackendShape`], compared
    /// borrowed (a render that follows another compares every backend's).
    pub fn same_shape(&self, other: &BackendPlan) -> bool {
        self.mode == other.mode
            && self.balance == other.balance
            && self.timeout_server == other.timeout_server
            && self.timeout_connect == other.timeout_connect
            && self.cookie == other.cookie
    }

    /// Whether this backend serves a port of Service `namespace/service`
    /// (its name is `be_<namespace>_<service>_<port>`).
    pub fn serves_service(&self, namespace: &str, service: &str) -> bool {
        self.name
            .strip_prefix("be_")
            .and_then(|rest| rest.strip_prefix(namespace))
            .and_then(|rest| rest.strip_prefix('_'))
            .and_then(|rest| rest.strip_prefix(service))
            .is_some_and(|rest| rest.starts_with('_'))
    }
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum BackendMode {
    #[default]
    Http,
    Tcp,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerPlan {
    pub name: String,
    /// An IP address, or a DNS name for an ExternalName Service.
    pub address: String,
    pub port: u16,
    pub weight: u16,
    pub state: ServerState,
    /// True when `address` is a DNS name HAProxy resolves itself.
    pub resolve: bool,
    /// The protocol spoken to the server when not HTTP/1.1: `h2` (HTTP/2 in
    /// clear text, for gRPC).
    #[serde(default)]
    pub proto: Option<String>,
    /// Every other server keyword, one CLI word each (`ssl`, `verify`,
    /// `none`, `send-proxy-v2`, `cookie`, …): written on the rendered server
    /// line and given to `add server` alike, so a server added at runtime
    /// behaves as a rendered one. A change to an existing server's
    /// keywords takes a reload.
    #[serde(default)]
    pub keywords: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerState {
    /// Takes traffic.
    Ready,
    /// Kept configured but out of rotation.
    Maintenance,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapPlan {
    /// Relative to the tree root, e.g. `maps/routes.map`.
    pub path: String,
    /// How HAProxy matches keys in this map (`str` or `beg`).
    pub match_kind: MatchKind,
    /// In file order. For `beg` maps the order is longest key first, which
    /// makes HAProxy pick the longest prefix however it indexes the map.
    /// (On the wire, from plan format 3, they travel in the map's file.)
    #[serde(default)]
    pub entries: Vec<MapEntry>,
    /// A second copy of this map, with the same entries (plan format 3 and
    /// later). Requests read the copy [`LIVE_TWINS_MAP_PATH`] names for
    /// `path`; a change of several entries is made in the other copy, then
    /// that one is named, then the first is changed too, so requests and a
    /// crash at any step meet one whole version of the map, never a mix.
    ///
    /// [`LIVE_TWINS_MAP_PATH`]: crate::LIVE_TWINS_MAP_PATH
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin: Option<String>,
}

impl MapPlan {
    /// A `beg` map at `path` with `entries` longest key first: HAProxy then
    /// takes the longest match whether it walks the map as a list or indexes
    /// it as a prefix tree (an exact key, ending in `|`, is longer than any
    /// prefix key that also matches).
    pub fn longest_first(path: &str, mut entries: Vec<MapEntry>) -> MapPlan {
        entries.sort_by(|a, b| MapEntry::longest_first(&a.key, &b.key));
        MapPlan {
            path: path.to_string(),
            match_kind: MatchKind::Beg,
            entries,
            twin: None,
        }
    }

    /// The map that says which copy of each twinned map in `maps` requests
    /// read: on disk, each map's own path (see [`MapPlan::twin`]).
    pub fn live_twins(maps: &[MapPlan]) -> Option<MapPlan> {
        let entries: Vec<MapEntry> = maps
            .iter()
            .filter(|m| m.twin.is_some())
            .map(|m| MapEntry::new(m.path.as_str(), m.path.as_str()))
            .collect();
        (!entries.is_empty()).then(|| MapPlan {
            path: crate::LIVE_TWINS_MAP_PATH.to_string(),
            match_kind: MatchKind::Str,
            entries,
            twin: None,
        })
    }

    /// The map kept in two copies, `path` and `twin` (see [`MapPlan::twin`]).
    pub fn with_twin(mut self, twin: &str) -> MapPlan {
        self.twin = Some(twin.to_string());
        self
    }
}

impl Plan {
    /// The map at `path`, which may be a map's twin.
    pub fn map_at(&self, path: &str) -> Option<&MapPlan> {
        self.maps
            .iter()
            .find(|m| m.path == path || m.twin.as_deref() == Some(path))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    Str,
    Beg,
    /// Keys are IPv4/IPv6 networks, looked up by address (`map_ip`); plan
    /// format 2 and later.
    Ip,
    /// Keys are regular expressions, tried in file order (`map_reg`); plan
    /// format 2 and later.
    Reg,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapEntry {
    /// Shared: a map of thousands of entries is copied by reference, each
    /// entry's text written once (the renderer keeps the routes map it
    /// patches, and hands a copy on with each version).
    pub key: Arc<str>,
    pub value: Arc<str>,
}

impl MapEntry {
    pub fn new(key: impl Into<Arc<str>>, value: impl Into<Arc<str>>) -> MapEntry {
        MapEntry {
            key: key.into(),
            value: value.into(),
        }
    }

    /// The order of keys in a [`MapPlan::longest_first`] map: longest
    /// first, then by key.
    pub fn longest_first(a: &str, b: &str) -> std::cmp::Ordering {
        b.len().cmp(&a.len()).then_with(|| a.cmp(b))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertificatePlan {
    /// Relative path of the PEM file (certificate chain then key).
    pub path: String,
    /// Where it came from (`Secret app/web-tls`, or `generated`).
    pub source: String,
    /// When a Secret's certificate expires: its notAfter, Unix seconds
    /// (none for a generated or given default certificate, and in plans
    /// from older controllers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrtListPlan {
    pub path: String,
    /// The first entry is the default certificate, served when no SNI matches.
    pub entries: Vec<CrtListEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrtListEntry {
    pub certificate: String,
    /// SNI names this certificate answers for; empty means its own names.
    pub sni: Vec<String>,
    /// SSL options of the line (`ca-file <path> verify optional`: client
    /// certificates), one word each; an entry with options is not added at
    /// runtime (its CA file must be loaded first): a change to them reloads.
    #[serde(default)]
    pub options: Vec<String>,
}

impl MapPlan {
    /// The map file as HAProxy reads it: one `key value` line per entry.
    pub fn to_file(&self) -> String {
        let mut out = String::with_capacity(self.entries.len() * 48);
        for entry in &self.entries {
            out.push_str(&entry.key);
            out.push(' ');
            out.push_str(&entry.value);
            out.push('\n');
        }
        out
    }
}

impl CrtListPlan {
    /// The crt-list file: `<cert> [[<options>]] [<sni> ...]` per line.
    pub fn to_file(&self) -> String {
        let mut out = String::new();
        for entry in &self.entries {
            out.push_str(&entry.certificate);
            if !entry.options.is_empty() {
                out.push_str(" [");
                out.push_str(&entry.options.join(" "));
                out.push(']');
            }
            for sni in &entry.sni {
                out.push(' ');
                out.push_str(sni);
            }
            out.push('\n');
        }
        out
    }
}
