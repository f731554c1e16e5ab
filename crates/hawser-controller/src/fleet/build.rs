//! Renders per agent settings, and what a render looks like on the wire.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use hawser_agent::tree::digest;
use hawser_proto::v1;
use hawser_render::{CertificatePem, RenderConfig, RenderError, Renderer};

use super::Snapshot;

/// One render as agents receive it: entries by digest, contents by digest.
#[derive(Debug)]
pub struct Built {
    pub generation: u64,
    pub files: Vec<v1::FileEntry>,
    pub plan_digest: String,
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

/// A renderer per distinct set of agent settings (in a cluster, one), and
/// the newest snapshot's render for each.
#[derive(Debug)]
pub struct Renders {
    base: RenderConfig,
    default_certificate: CertificatePem,
    renderers: Mutex<HashMap<SettingsKey, Arc<Renderer>>>,
    built: Mutex<HashMap<SettingsKey, Arc<Built>>>,
}

impl Renders {
    pub fn new(
        base: RenderConfig,
        default_certificate: CertificatePem,
    ) -> Result<Self, RenderError> {
        // Fail at start, not per agent, when the configuration cannot render.
        Renderer::new(base.clone())?;
        Ok(Renders {
            base,
            default_certificate,
            renderers: Mutex::default(),
            built: Mutex::default(),
        })
    }

    /// The render of `snapshot` for an agent asking for `settings`.
    pub fn build(&self, snapshot: &Snapshot, settings: &SettingsKey) -> Result<Arc<Built>, String> {
        if let Some(built) = self
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(settings)
            .filter(|b| b.generation == snapshot.generation)
        {
            return Ok(Arc::clone(built));
        }
        let renderer = self.renderer(settings)?;
        let rendered = renderer
            .render(&snapshot.store)
            .map_err(|e| format!("render failed: {e}"))?;
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
        let plan_json = serde_json::to_vec(&rendered.plan)
            .map_err(|e| format!("the plan does not serialize: {e}"))?;
        let plan_digest = digest(&plan_json);
        blobs.insert(plan_digest.clone(), plan_json);
        let built = Arc::new(Built {
            generation: snapshot.generation,
            files,
            plan_digest,
            blobs,
        });
        self.built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(settings.clone(), Arc::clone(&built));
        Ok(built)
    }

    fn renderer(&self, settings: &SettingsKey) -> Result<Arc<Renderer>, String> {
        let mut renderers = self
            .renderers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(renderer) = renderers.get(settings) {
            return Ok(Arc::clone(renderer));
        }
        let mut config = self.base.clone();
        for (key, value) in settings {
            config
                .settings
                .set_agent_setting(key, value)
                .map_err(|e| format!("the agent's settings: {e}"))?;
        }
        let renderer = Renderer::new(config)
            .map_err(|e| format!("cannot render for the agent's settings: {e}"))?
            .with_default_certificate(self.default_certificate.clone());
        let renderer = Arc::new(renderer);
        renderers.insert(settings.clone(), Arc::clone(&renderer));
        Ok(renderer)
    }
}
