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

use serde::Serialize;

use super::{RuleView, Step};
use crate::config::Settings;

/// The Lua half ([`MIRROR_LUA`]), written into the tree at [`LUA_PATH`] when
/// a rule mirrors; both are the contract's, so the agent knows the file.
pub(crate) use hawser_plan::{MIRROR_LUA, MIRROR_LUA_PATH as LUA_PATH};

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

/// The mirror view when one of `rules` mirrors (its socket: see
/// [`Settings::internal_socket`]).
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
    Some(MirrorView {
        lua: LUA_PATH,
        address: settings.internal_socket(SOCKET_NAME),
        backends: backends.into_iter().map(str::to_string).collect(),
    })
}

#[cfg(test)]
mod tests;
