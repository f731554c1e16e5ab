//! Renders per agent settings, and what a render looks like on the wire.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use hawser_plan::{PLAN_FORMAT, PlanFormatError, digest, encode};
use hawser_proto::v1;
use hawser_render::{CertificatePem, RenderConfig, RenderError, Renderer};

use super::Snapshot;

/// One render as agents receive it: entries by digest, contents by digest,
/// the plan encoded in [`PLAN_FORMAT`].
#[derive(Debug)]
pub struct Built {
    pub generation: u64,
    pub files: Vec<v1::FileEntry>,
    pub plan_digest: String,
    pub plan_format: u32,
    pub blobs: HashMap<String, Vec<u8>>,
}

impl Built {
    /// Whether an agent's state shows it holds exactly this render.
    pub fn held_by(&self, state: &v1::State) -> bool {
        state.plan_digest == self.plan_digest
            && state.files.len() == self.files.len()
            && self
                .files
                .iter()
                .all(|f| state.files.get(&f.path) == Some(&f.digest))
    }
}

type SettingsKey = BTreeMap<String, String>;

/// Why an agent's render could not be built (shown as its `last_error`).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("the agent's settings: {0}")]
    Settings(String),
    #[error("cannot render for the agent's settings: {0}")]
    Renderer(#[source] RenderError),
    #[error("render failed: {0}")]
    Render(#[source] RenderError),
    #[error(transparent)]
    Plan(#[from] PlanFormatError),
}

impl BuildError {
    /// A stable category for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            BuildError::Settings(_) => "agent_settings",
            BuildError::Renderer(_) => "renderer",
            BuildError::Render(_) => "render",
            BuildError::Plan(_) => "plan_format",
        }
    }
}

/// A renderer per distinct set of agent settings (in a cluster, one), and
/// the newest snapshot's render for each. Renderers follow the snapshot's
/// configuration: a new one drops them all.
#[derive(Debug)]
pub struct Renders {
    default_certificate: CertificatePem,
    renderers: Mutex<Renderers>,
    built: Mutex<HashMap<SettingsKey, Arc<Built>>>,
}

#[derive(Debug)]
struct Renderers {
    base: Arc<RenderConfig>,
    by_settings: HashMap<SettingsKey, Arc<Renderer>>,
}

impl Renders {
    pub fn new(
        base: RenderConfig,
        default_certificate: CertificatePem,
    ) -> Result<Self, RenderError> {
        // Fail at start, not per agent, when the configuration cannot render.
        Renderer::new(base.clone())?;
        Ok(Renders {
            default_certificate,
            renderers: Mutex::new(Renderers {
                base: Arc::new(base),
                by_settings: HashMap::new(),
            }),
            built: Mutex::default(),
        })
    }

    /// The render of `snapshot` for an agent asking for `settings`.
    pub fn build(
        &self,
        snapshot: &Snapshot,
        settings: &SettingsKey,
    ) -> Result<Arc<Built>, BuildError> {
        if let Some(built) = self
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(settings)
            .filter(|b| b.generation == snapshot.generation)
        {
            return Ok(Arc::clone(built));
        }
        let renderer = self.renderer(&snapshot.config, settings)?;
        let rendered = renderer
            .render(&snapshot.store)
            .map_err(BuildError::Render)?;
        let mut blobs = HashMap::new();
        let files = rendered
            .files
            .iter()
            .map(|(path, file)| {
                let d = digest(&file.content);
                blobs.insert(d.clone(), file.content.clone());
                v1::FileEntry {
                    path: path.to_string(),
                    digest: d,
                    kind: file.kind.name().to_string(),
                }
            })
            .collect();
        let plan = encode(&rendered.plan)?;
        let plan_digest = digest(&plan);
        blobs.insert(plan_digest.clone(), plan);
        let built = Arc::new(Built {
            generation: snapshot.generation,
            files,
            plan_digest,
            plan_format: PLAN_FORMAT,
            blobs,
        });
        self.built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(settings.clone(), Arc::clone(&built));
        Ok(built)
    }

    fn renderer(
        &self,
        config: &Arc<RenderConfig>,
        settings: &SettingsKey,
    ) -> Result<Arc<Renderer>, BuildError> {
        let mut renderers = self
            .renderers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *renderers.base != **config {
            renderers.base = Arc::clone(config);
            renderers.by_settings.clear();
        }
        if let Some(renderer) = renderers.by_settings.get(settings) {
            return Ok(Arc::clone(renderer));
        }
        let mut config = RenderConfig::clone(config);
        for (key, value) in settings {
            config
                .settings
                .set_agent_setting(key, value)
                .map_err(BuildError::Settings)?;
        }
        let renderer = Renderer::new(config)
            .map_err(BuildError::Renderer)?
            .with_default_certificate(self.default_certificate.clone());
        let renderer = Arc::new(renderer);
        renderers
            .by_settings
            .insert(settings.clone(), Arc::clone(&renderer));
        Ok(renderer)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use hawser_render::{CONFIG_PATH, generate_default_certificate};

    use super::*;

    fn snapshot(generation: u64, config: RenderConfig) -> Snapshot {
        Snapshot {
            generation,
            store: Arc::default(),
            config: Arc::new(config),
            served: Arc::default(),
            rejected: Arc::default(),
        }
    }

    fn config_text(built: &Built) -> String {
        let entry = built.files.iter().find(|f| f.path == CONFIG_PATH).unwrap();
        String::from_utf8(built.blobs[&entry.digest].clone()).unwrap()
    }

    #[test]
    fn each_agent_render_follows_the_snapshot_configuration() {
        let renders = Renders::new(
            RenderConfig::default(),
            generate_default_certificate().unwrap(),
        )
        .unwrap();
        let agent: SettingsKey = [("httpsPort".to_string(), "9443".to_string())].into();
        let first = renders
            .build(&snapshot(1, RenderConfig::default()), &agent)
            .unwrap();
        assert!(config_text(&first).contains(":80\n"));
        assert!(config_text(&first).contains(":9443 ssl"));

        let mut changed = RenderConfig::default();
        changed.settings.http_port = 8080;
        let second = renders.build(&snapshot(2, changed), &agent).unwrap();
        assert!(config_text(&second).contains(":8080\n"));
        assert!(
            config_text(&second).contains(":9443 ssl"),
            "the agent's own setting stays"
        );
    }
}
