//! Request mirrors: the Lua action, the configuration that loads it and the
//! internal frontend it sends copies to appear only in a render where a rule
//! mirrors, so configurations without mirrors never need a Lua-enabled HAProxy.

use crate::support;

use hawser_render::{CONFIG_PATH, FileKind};

use support::{case_names, render_case};

const MIRROR_CASE: &str = "gateway-mirror";

#[test]
fn without_a_mirror_nothing_needs_lua() {
    for name in case_names().iter().filter(|n| *n != MIRROR_CASE) {
        let case = render_case(name);
        let files = &case.rendered.files;
        assert!(
            files.iter().all(|(_, f)| f.kind != FileKind::Lua),
            "{name}: a Lua file"
        );
        let config = files.text(CONFIG_PATH).expect("haproxy.cfg");
        for needs_lua in ["lua-load", "lua.hawser_mirror", "frontend hawser_mirror"] {
            assert!(!config.contains(needs_lua), "{name}: {needs_lua}");
        }
    }
}

#[test]
fn a_mirror_loads_the_lua_action_and_writes_its_frontend() {
    let case = render_case(MIRROR_CASE);
    let files = &case.rendered.files;
    let lua = files.get("lua/mirror.lua").expect("the Lua file");
    assert_eq!(lua.kind, FileKind::Lua);
    assert_eq!(lua.mode(), 0o644);
    let source = files.text("lua/mirror.lua").expect("text");
    assert!(source.contains("core.register_action(\"hawser_mirror\""));

    let config = files.text(CONFIG_PATH).expect("haproxy.cfg");
    let lines: Vec<&str> = config.lines().map(str::trim).collect();
    let global = &lines[..lines
        .iter()
        .position(|l| *l == "defaults")
        .expect("defaults")];
    assert!(
        global.contains(&"lua-load lua/mirror.lua \"unix@/run/hawser/mirror.sock\""),
        "{global:?}"
    );
    let frontend: Vec<&str> = lines
        .iter()
        .skip_while(|l| **l != "frontend hawser_mirror")
        .take_while(|l| !l.is_empty())
        .copied()
        .collect();
    assert!(
        frontend.contains(&"bind \"unix@/run/hawser/mirror.sock\" mode 600"),
        "{frontend:?}"
    );
    // Only Services a kept mirror resolved to; the missing one is dropped.
    let targets: Vec<&str> = frontend
        .iter()
        .filter_map(|l| l.strip_prefix("use_backend "))
        .map(|l| l.split(' ').next().unwrap_or_default())
        .collect();
    assert_eq!(targets, ["be_shop_canary_80", "be_shop_shadow_80"]);
    assert!(case.rendered.diagnostics.iter().any(|d| {
        d.message.contains("requestMirror") && d.message.contains("serves without that mirror")
    }));

    // Both frontends serving the route mirror; shares are sampled.
    let mirrors: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("http-request lua.hawser_mirror "))
        .copied()
        .collect();
    assert_eq!(mirrors.len(), 2 * 4, "{mirrors:#?}");
    assert!(
        mirrors.iter().any(
            |l| l.contains("be_shop_shadow_80") && l.contains("{ rand(100) -m int lt \"25\" }")
        )
    );
    assert!(
        mirrors
            .iter()
            .any(|l| l.contains("be_shop_canary_80") && l.contains("{ rand(3) -m int lt \"1\" }"))
    );
    // A header change applies to the copy: the mirror comes after it.
    let set = lines
        .iter()
        .position(|l| l.starts_with("http-request set-header X-Mirrored"))
        .expect("the header change");
    let sampled = lines
        .iter()
        .position(|l| l.contains("rand(100)"))
        .expect("the sampled mirror");
    assert!(set < sampled);
}
