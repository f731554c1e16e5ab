//! Shared by the integration tests: the input cases under `tests/inputs/`, the
//! fixture certificate, and a renderer whose output does not depend on a
//! generated certificate.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use hawser_model::Store;
use hawser_render::{CertificatePem, RenderConfig, Rendered, Renderer};

/// The optional render configuration of a case, next to its manifests.
pub const CONFIG_FILE: &str = "config.yaml";

/// hawser-render's `tests/inputs/`, also from the controller's test of the
/// gate's policy, which compiles this module too.
pub fn inputs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../hawser-render/tests/inputs")
}

/// The names of the case directories under `tests/inputs/`, sorted.
pub fn case_names() -> Vec<String> {
    let entries = fs::read_dir(inputs()).unwrap_or_else(|e| panic!("tests/inputs: {e}"));
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The certificate pair `tests/inputs/make-certs.sh` made.
pub fn fixture_certificate() -> CertificatePem {
    let dir = inputs().join("tls");
    let read = |file: &str| fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    CertificatePem::from_parts(&read("tls.crt"), &read("tls.key"))
        .unwrap_or_else(|e| panic!("fixture certificate: {e}"))
}

/// A renderer serving the fixture certificate by default, so renders are stable.
pub fn renderer(config: RenderConfig) -> Renderer {
    Renderer::new(config)
        .unwrap_or_else(|e| panic!("config: {e}"))
        .with_default_certificate(fixture_certificate())
}

/// One input case, loaded and rendered.
#[derive(Debug)]
pub struct Case {
    pub dir: PathBuf,
    pub store: Store,
    pub config: RenderConfig,
    pub rendered: Rendered,
    /// Problems loading the manifests (`file:line: message`, file relative to
    /// the case directory), apart from the config file, which is no manifest.
    pub problems: Vec<String>,
}

pub fn render_case(name: &str) -> Case {
    let dir = inputs().join(name);
    let set = hawser_k8s::load_dir(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let config_path = dir.join(CONFIG_FILE);
    let config = match fs::read_to_string(&config_path) {
        Ok(text) => RenderConfig::from_yaml(&text).unwrap_or_else(|e| panic!("{name}: {e}")),
        Err(_) => RenderConfig::default(),
    };
    let problems = set
        .problems
        .iter()
        .filter(|p| p.file != config_path)
        .map(|p| {
            let file = p.file.strip_prefix(&dir).unwrap_or(&p.file).display();
            let line = p.line.map(|l| format!(":{l}")).unwrap_or_default();
            let object = p
                .object
                .as_ref()
                .map(|o| format!("{o}: "))
                .unwrap_or_default();
            format!("{file}{line}: {object}{}", p.message)
        })
        .collect();
    let rendered = renderer(config.clone())
        .render(&set.store)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    Case {
        dir,
        store: set.store,
        config,
        rendered,
        problems,
    }
}
