//! The Lua files hawser's own library writes into a tree, and their digests.
//!
//! The config policy (`hawser_haproxy::ConfigPolicy`) lets a configuration
//! `lua-load` a file only when the file in the tree has one of these
//! digests: the built-in Lua is told apart by what it is, never by the line
//! that loads it. The bytes are embedded here, so the agent trusts them
//! without the renderer.

use sha2::{Digest, Sha256};

/// The request mirror's Lua action, written at [`crate::MIRROR_LUA_PATH`]
/// when a rule mirrors.
pub const MIRROR_LUA: &[u8] = include_bytes!("../../../libraries/gateway/mirror.lua");

/// External authentication's Lua action, written at
/// [`crate::AUTH_LUA_PATH`] when an Ingress asks for it.
pub const AUTH_LUA: &[u8] = include_bytes!("../../../libraries/ingress/auth.lua");

/// The SHA-256 of every built-in Lua file (the request mirror's action,
/// external authentication's).
pub fn builtin_lua_digests() -> Vec<[u8; 32]> {
    [MIRROR_LUA, AUTH_LUA]
        .iter()
        .map(|lua| Sha256::digest(lua).into())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_and_auth_lua_are_built_in() {
        let digest = |lua: &[u8]| -> [u8; 32] { Sha256::digest(lua).into() };
        assert_eq!(
            builtin_lua_digests(),
            [digest(MIRROR_LUA), digest(AUTH_LUA)]
        );
    }
}
