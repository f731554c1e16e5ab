//! Loading what every rendering command needs: the manifests and the config.

use std::path::Path;

use anyhow::Context as _;
use hawser_controller::ConfigFile;
use hawser_haproxy::ConfigPolicy;
use hawser_k8s::{ManifestSet, load_dir};
use hawser_render::{RenderConfig, Rendered, Renderer, Severity};

use super::UsageError;
use crate::cli::InputArgs;

pub struct Inputs {
    pub manifests: ManifestSet,
    pub renderer: Renderer,
    /// The config policy for this render (the user's own settings are trusted).
    pub policy: ConfigPolicy,
}

pub fn load(args: &InputArgs) -> anyhow::Result<Inputs> {
    let config = match &args.config {
        Some(path) => read_config(path)?,
        None => RenderConfig::default(),
    };
    load_with(&args.manifests, config)
}

pub fn load_with(manifests: &Path, config: RenderConfig) -> anyhow::Result<Inputs> {
    let policy = hawser_controller::gate::config_policy(&config);
    let renderer = Renderer::new(config).map_err(|e| UsageError(e.into()))?;
    let manifests = read_manifests(manifests)?;
    Ok(Inputs {
        manifests,
        renderer,
        policy,
    })
}

/// The manifests of `dir`; each malformed one is reported on stderr.
pub fn read_manifests(dir: &Path) -> anyhow::Result<ManifestSet> {
    let manifests = load_dir(dir).map_err(|e| UsageError(e.into()))?;
    for problem in &manifests.problems {
        eprintln!("manifest problem: {problem}");
    }
    Ok(manifests)
}

/// The render configuration of a config file (its tests are checked, then
/// left to `hawser test`).
pub fn read_config(path: &Path) -> anyhow::Result<RenderConfig> {
    read_config_file(path).map(|file| file.render)
}

pub fn read_config_file(path: &Path) -> anyhow::Result<ConfigFile> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))
        .map_err(UsageError)?;
    ConfigFile::from_yaml(&text)
        .with_context(|| format!("config {}", path.display()))
        .map_err(|e| UsageError(e).into())
}

/// Prints diagnostics to stderr; returns how many objects were rejected.
pub fn report(rendered: &Rendered) -> usize {
    let mut rejected = 0;
    for diagnostic in &rendered.diagnostics {
        if diagnostic.severity == Severity::Rejected {
            rejected += 1;
        }
        eprintln!("{diagnostic}");
    }
    rejected
}

/// One line saying what a render holds.
pub fn summary(rendered: &Rendered) -> String {
    let routes: usize = rendered.plan.maps.iter().map(|m| m.entries.len()).sum();
    let servers: usize = rendered.plan.backends.iter().map(|b| b.servers.len()).sum();
    format!(
        "{} files: {} backends with {} servers, {} map entries, {} certificates",
        rendered.files.len(),
        rendered.plan.backends.len(),
        servers,
        routes,
        rendered.plan.certificates.len(),
    )
}
