//! Request mirrors (HTTPRoute `RequestMirror`). HAProxy 3.0 cannot send a
//! request to two backends, so a Lua action does it beside the request:
//!
//! ```text
//!  client ─► frontend ─ http-request lua.hawser_mirror <backend> ─► chosen backend ─► answer
//!                         │ copies method, path and query, headers, a buffered body;
//!                         │ a task of its own sends the copy, never waiting for it
//!                         ▼
//!            HTTP client ─► frontend hawser_mirror (unix socket) ─► <backend> ─► answer dropped
//! ```
//!
//! The internal frontend sends a copy only to the backends listed here (the
//! Lua action names one in a header that the frontend reads and removes), so
//! the copy reaches the Service's endpoints through an ordinary backend
//! whose servers the agent changes at runtime. Nothing here exists, and no
//! Lua is loaded, unless a rule mirrors.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use super::{RuleView, Step};
use crate::config::Settings;

/// The Lua half, written into the tree at [`LUA_PATH`] when a rule mirrors.
pub(crate) const MIRROR_LUA: &str = include_str!("../../../../libraries/gateway/mirror.lua");

/// Where the Lua file goes in the rendered tree (relative, like every path).
pub(crate) const LUA_PATH: &str = "lua/mirror.lua";

/// The internal frontend's socket, beside the runtime API's socket.
const SOCKET_NAME: &str = "mirror.sock";

/// What the templates read to load the Lua action and write the internal
/// frontend (`gateway.mirror`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MirrorView {
    /// The Lua file `lua-load` loads.
    pub lua: &'static str,
    /// The internal frontend's address (`unix@<path>`), given to the Lua
    /// file as its argument and bound by the frontend.
    pub address: String,
    /// The backends copies may go to, sorted.
    pub backends: Vec<String>,
}

/// The mirror view when one of `rules` mirrors.
///
/// The socket lives in the directory of `settings.runtime_socket`, which
/// stays put across reloads; without one it is relative, so it lands in
/// HAProxy's working directory (the rendered tree).
pub(crate) fn mirror_view<'a>(
    settings: &Settings,
    rules: impl IntoIterator<Item = &'a RuleView>,
) -> Option<MirrorView> {
    let backends: BTreeSet<&str> = rules
        .into_iter()
        .flat_map(|rule| &rule.request)
        .filter_map(|action| match &action.step {
            Step::Mirror { backend } => Some(backend.as_str()),
            _ => None,
        })
        .collect();
    if backends.is_empty() {
        return None;
    }
    let socket = settings
        .runtime_socket
        .as_deref()
        .and_then(|runtime| Path::new(runtime).parent())
        .map_or_else(
            || SOCKET_NAME.to_string(),
            |dir| dir.join(SOCKET_NAME).display().to_string(),
        );
    Some(MirrorView {
        lua: LUA_PATH,
        address: format!("unix@{socket}"),
        backends: backends.into_iter().map(str::to_string).collect(),
    })
}

#[cfg(test)]
mod tests {
    use hawser_model::{MirrorFraction, ServicePortRef};

    use super::super::{Action, actions, conditions};
    use super::*;
    use crate::backends::BackendKey;
    use crate::gateway::{FilterEntry, ListenerEntry, ListenerProtocol, MirrorEntry};

    fn mirror(service: &str, numerator: u32, denominator: u32) -> FilterEntry {
        let key = BackendKey {
            namespace: "app".to_string(),
            service: service.to_string(),
            port: ServicePortRef::Number(80),
        };
        FilterEntry::RequestMirror(MirrorEntry {
            backend: key.name(),
            key,
            fraction: MirrorFraction {
                numerator,
                denominator,
            },
        })
    }

    /// The request actions of a rule with `filters`, as `kind when...` lines.
    fn request_actions(filters: &[FilterEntry]) -> (RuleView, Vec<String>) {
        let listener = ListenerEntry {
            name: "http".to_string(),
            port: 80,
            protocol: ListenerProtocol::Http,
            hostname: None,
            tls: None,
            http_rules: Vec::new(),
            grpc_rules: Vec::new(),
            tls_routes: Vec::new(),
            tcp_routes: Vec::new(),
        };
        let mut rule = RuleView::new("r1".to_string(), String::new(), Vec::new());
        let ctx = actions::FilterContext {
            listener: &listener,
            prefix: None,
        };
        let chosen = [conditions::rule_is("r1")];
        actions::add_filters(&mut rule, filters, &chosen, &ctx);
        let lines = rule.request.iter().map(describe).collect();
        (rule, lines)
    }

    fn describe(action: &Action) -> String {
        let step = match &action.step {
            Step::Mirror { backend } => format!("mirror {backend}"),
            Step::SetHeader { name, .. } => format!("set {name}"),
            other => format!("{other:?}"),
        };
        let when: Vec<String> = action
            .when
            .iter()
            .map(|c| {
                format!(
                    "{} {} {}",
                    c.fetch,
                    c.matcher,
                    c.value.as_deref().unwrap_or("")
                )
            })
            .collect();
        format!("{step} if {}", when.join(" && "))
    }

    #[test]
    fn mirrors_follow_the_other_filters_and_sample_their_share() {
        let header = FilterEntry::RequestHeaderModifier(hawser_model::HeaderModifier {
            set: vec![("x-a".to_string(), "1".to_string())],
            ..Default::default()
        });
        let filters = [
            mirror("all", 1, 1),
            mirror("none", 0, 100),
            header,
            mirror("third", 1, 3),
        ];
        let (rule, lines) = request_actions(&filters);
        assert_eq!(
            lines,
            [
                "set x-a if var(txn.gw_rule) -m str r1",
                "mirror be_app_all_80 if var(txn.gw_rule) -m str r1",
                "mirror be_app_third_80 if var(txn.gw_rule) -m str r1 && rand(3) -m int lt 1",
            ]
        );
        let view = mirror_view(&Settings::default(), [&rule]).expect("a rule mirrors");
        assert_eq!(view.backends, ["be_app_all_80", "be_app_third_80"]);
    }

    #[test]
    fn the_socket_sits_beside_the_runtime_socket_or_in_the_tree() {
        let (rule, _) = request_actions(&[mirror("a", 1, 1), mirror("a", 1, 2)]);
        let relative = mirror_view(&Settings::default(), [&rule]).expect("a rule mirrors");
        assert_eq!(relative.address, "unix@mirror.sock");
        assert_eq!(relative.lua, LUA_PATH);
        assert_eq!(relative.backends, ["be_app_a_80"]);
        let settings = Settings {
            runtime_socket: Some("/run/hawser/admin.sock".to_string()),
            ..Settings::default()
        };
        let beside = mirror_view(&settings, [&rule]).expect("a rule mirrors");
        assert_eq!(beside.address, "unix@/run/hawser/mirror.sock");
        let (plain, _) = request_actions(&[]);
        assert_eq!(mirror_view(&settings, [&plain]), None);
    }
}
