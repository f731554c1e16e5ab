//! Settings that name hawser's own paths (`runtimeSocket`,
//! `serverStateFile`) are absolute and normalized: the config policy trusts
//! them exactly as written, so each must name one file one way.

use hawser_render::RenderConfig;

fn with(field: &str, value: &str) -> Result<RenderConfig, String> {
    RenderConfig::from_yaml(&format!("settings:\n  {field}: {value:?}\n"))
        .map_err(|e| e.to_string())
}

#[test]
fn plain_absolute_paths_are_accepted() {
    for field in ["runtimeSocket", "serverStateFile"] {
        with(field, "/run/hawser/admin.sock").unwrap();
    }
}

#[test]
fn other_paths_are_refused_naming_the_setting() {
    for field in ["runtimeSocket", "serverStateFile"] {
        for value in [
            "run/hawser/admin.sock",
            "/run/../etc/passwd",
            "/run/./admin.sock",
            "/run//admin.sock",
            "/run/hawser/",
            "/",
            "/run/$HOME",
            "/run/${HOME}",
            "~/admin.sock",
            "/run/admin sock",
        ] {
            let error = with(field, value).expect_err(value);
            assert!(error.contains(field), "{value}: {error}");
            assert!(error.contains("normalized"), "{value}: {error}");
        }
    }
}
