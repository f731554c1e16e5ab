//! The one list of what the config policy looks for: keywords that load or
//! run code, touch the environment, or name a file or a socket.
//!
//! Derived from HAProxy 3.0.0's keyword reference, `doc/configuration.txt`:
//! 3.1 (process management and security), 3.2–3.10 (global tuning, SSL,
//! HTTP client, device detection, the `program`, `ring`, `crt-store`,
//! `peers`, `resolvers`, `mailers`, `http-errors` and `log-forward`
//! sections), 4.2 (proxy keywords: `errorfile`, `external-check`,
//! `server-state-file-name`, `http-request`/`http-error` `return`), 5.1 and
//! 5.2 (bind and server options), 7 (ACL `-f`), 7.3.1 (map converters),
//! 4.3 actions (`set-map`, `del-map`, `add-acl`, `del-acl`), 9.3 and 9.4
//! (SPOE and OpenTracing filters' `config`). Keywords are compared in
//! lower case although HAProxy compares them exactly: a keyword in another
//! case is refused rather than let through (refuse more, never less).

/// First words that load or run code, or fork, whatever follows them.
/// `lua-load` and `lua-load-per-thread` are the one exception, for the
/// built-in Lua by its digest (see `ConfigPolicy::allow_lua_digest`);
/// every other word starting with `lua-` is refused too.
pub(crate) const CODE_LOADERS: &[&str] = &[
    "lua-load",
    "lua-load-per-thread",
    "lua-prepend-path",
    // `program` section and its `command`.
    "program",
    "command",
    // External checks run a program per check.
    "external-check",
    "insecure-fork-wanted",
    "insecure-setuid-wanted",
    // OpenSSL engines and providers are shared libraries.
    "ssl-engine",
    "ssl-provider",
    "ssl-provider-path",
];

/// `option <word>` that runs code.
pub(crate) const CODE_OPTIONS: &[&str] = &["external-check"];

/// The prefix of every Lua keyword of the global section.
pub(crate) const LUA_PREFIX: &str = "lua-";

/// The keywords that load a Lua file, allowed for the built-in Lua only.
pub(crate) const LUA_LOADERS: &[&str] = &["lua-load", "lua-load-per-thread"];

/// First words that change HAProxy's environment.
pub(crate) const ENVIRONMENT_KEYWORDS: &[&str] = &["setenv", "presetenv", "resetenv", "unsetenv"];

/// Sample fetches that read the environment (`env(NAME)`), and the `.if`
/// predicate that tests it (`defined(NAME)`, in `.if`/`.elif` lines only).
pub(crate) const ENVIRONMENT_FETCHES: &[&str] = &["env"];
pub(crate) const ENVIRONMENT_PREDICATES: &[&str] = &["defined"];
pub(crate) const CONDITIONS: &[&str] = &[".if", ".elif"];

/// First words that read a fixed host file whatever their arguments
/// (`/etc/resolv.conf`; `/var/run/netns/<name>` for network namespaces).
pub(crate) const HOST_READERS: &[&str] = &["parse-resolv-conf", "namespace_list"];

/// Bind and server options that open a host file named after their argument
/// (`namespace <name>`: `/var/run/netns/<name>`).
pub(crate) const HOST_READING_OPTIONS: &[&str] = &["namespace"];

/// `default-path` may only keep paths in the tree.
pub(crate) const DEFAULT_PATH: &str = "default-path";
pub(crate) const DEFAULT_PATH_IN_TREE: &[&str] = &["current", "config"];

/// First words whose argument at the given position is a file or directory.
///
/// `chroot` is not one: it opens nothing, it confines HAProxy to a
/// directory once the configuration is loaded (and the agent's own check
/// refuses a missing one).
pub(crate) const FILE_KEYWORDS: &[(&str, usize)] = &[
    ("pidfile", 1),
    ("server-state-base", 1),
    ("server-state-file", 1),
    ("server-state-file-name", 1),
    ("ca-base", 1),
    ("crt-base", 1),
    ("key-base", 1),
    ("issuers-chain-path", 1),
    ("ssl-dh-param-file", 1),
    ("h1-case-adjust-file", 1),
    ("51degrees-data-file", 1),
    ("deviceatlas-json-file", 1),
    ("wurfl-data-file", 1),
    ("wurfl-patch-file", 1),
    ("httpclient.ssl.ca-file", 1),
    ("stats-file", 1),
    ("backing-file", 1),
    ("errorfile", 2),
];

/// The option after which a file is a crt-list, whose lines (`<crt>
/// [<bind options>] [<sni filters>]`) are judged like bind options
/// (`doc/configuration.txt` 5.1, `crt-list`).
pub(crate) const CRT_LIST: &str = "crt-list";

/// Words, anywhere on a line, followed by a file: bind and server options,
/// crt-store `load`, `return`/`http-error` bodies, ACL pattern files, filter
/// configuration files.
pub(crate) const FILE_OPTIONS: &[&str] = &[
    "crt",
    "crt-list",
    "key",
    "ocsp",
    "issuer",
    "sctl",
    "ca-file",
    "ca-sign-file",
    "ca-verify-file",
    "crl-file",
    "tls-ticket-keys",
    "errorfile",
    "file",
    "lf-file",
    "-f",
    "config",
    "backing-file",
];

/// A keyword and the option word after which its argument is a file
/// (scoped: `prefix` means a path only in `unix-bind`).
pub(crate) const SCOPED_FILE_OPTIONS: &[(&str, &str)] = &[("unix-bind", "prefix")];

/// Functions (converters, actions) whose first argument is a map or ACL
/// file: `map` and every `map_<match>`, and these.
pub(crate) const FILE_FUNCTIONS: &[&str] = &["map", "set-map", "del-map", "add-acl", "del-acl"];
pub(crate) const MAP_FUNCTION_PREFIX: &str = "map_";

/// First words (with a second word, for `stats socket`) whose argument at
/// the given position is an address, which may be a unix socket path.
pub(crate) const ADDRESS_KEYWORDS: &[(&str, Option<&str>, usize)] = &[
    ("bind", None, 1),
    ("dgram-bind", None, 1),
    ("server", None, 2),
    ("server-template", None, 3),
    ("peer", None, 2),
    ("nameserver", None, 2),
    ("mailer", None, 2),
    ("log", None, 1),
    ("stats", Some("socket"), 2),
];

/// `log` targets that are HAProxy's own standard output and error, the same
/// as `stdout` and `stderr`.
pub(crate) const LOG_STDIO: &[&str] = &["fd@1", "fd@2"];

/// Address prefixes of an inherited or socketpair file descriptor: never
/// (but [`LOG_STDIO`] for `log`).
pub(crate) const DESCRIPTOR_PREFIXES: &[&str] = &["fd@", "sockpair@"];

/// Abstract-namespace socket prefixes: shared by every process on the host.
pub(crate) const ABSTRACT_PREFIXES: &[&str] = &["abns@", "abnsz@"];

/// Unix socket prefixes: the path after them must be hawser's or in the tree.
pub(crate) const UNIX_PREFIXES: &[&str] = &["unix@", "uxst@", "uxdg@"];
