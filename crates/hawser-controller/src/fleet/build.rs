//! Renders per agent settings, and what a render looks like on the wire.
//!
//! One render per generation and set of agent settings: the render cycle
//! renders under the settings most agents ask for ([`Renders::cycle_renderer`]),
//! and a link whose agent asks for those settings takes that render as it
//! is ([`Renders::build`]); only an agent asking for other settings costs a
//! render of its own, shared with every agent asking for the same.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use hawser_plan::{Encoded, PLAN_FORMAT, PlanFormatError, digest, encode_after};
use hawser_proto::{blob_edit, v1};
use hawser_render::{CertificatePem, RenderConfig, RenderError, Rendered, Renderer};

use super::Snapshot;
use digests::Digests;

mod digests;

/// One render as agents receive it: entries by digest, contents by digest,
/// the plan encoded in [`PLAN_FORMAT`]. File contents are the render's
/// own, shared, never copied: only what an agent lacks is copied, into the
/// push that sends it.
#[derive(Debug)]
pub struct Built {
    pub generation: u64,
    pub files: Vec<v1::FileEntry>,
    pub plan_digest: String,
    pub plan_format: u32,
    /// The plan, encoded; the next build copies the backends it keeps from
    /// it.
    encoded_plan: Encoded,
    /// The render: its files' contents, and the plan the next render for
    /// the same settings follows, keeping its backends (see
    /// `Renderer::render_after`).
    rendered: Arc<Rendered>,
    /// Each file digest → the path of a file with that content.
    paths: HashMap<String, String>,
    /// The render before for the same settings, whose files agents most
    /// likely hold: a file changed since travels as an edit of its
    /// predecessor ([`Built::edit`]). Its own render before is not kept.
    earlier: Option<Earlier>,
}

/// A render's files by digest.
#[derive(Debug)]
struct Earlier {
    rendered: Arc<Rendered>,
    paths: HashMap<String, String>,
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

    /// The plan this render carries.
    pub fn plan(&self) -> &hawser_plan::Plan {
        &self.rendered.plan
    }

    /// The digest of every blob an agent may need: its files' and the plan's.
    pub fn digests(&self) -> impl Iterator<Item = &String> {
        self.paths.keys().chain(std::iter::once(&self.plan_digest))
    }

    /// The content of the blob named `digest`.
    pub fn blob(&self, digest: &str) -> Option<&[u8]> {
        if digest == self.plan_digest {
            return Some(&self.encoded_plan.bytes);
        }
        let path = self.paths.get(digest)?;
        self.rendered.files.get(path).map(|f| f.content.as_slice())
    }

    /// The blob named `digest` as an edit of the content named `base`, a
    /// file of the render before; `None` when that render is not kept, or
    /// when the edit would carry most of the blob anyway.
    pub fn edit(&self, digest: &str, base: &str) -> Option<v1::BlobEdit> {
        let earlier = self.earlier.as_ref()?;
        let base_path = earlier.paths.get(base)?;
        let base_content = &earlier.rendered.files.get(base_path)?.content;
        let path = self.paths.get(digest)?;
        let content = &self.rendered.files.get(path)?.content;
        blob_edit::edit_of(base_content, content, digest, base)
    }
}

/// What an agent asks the controller to render for it (its sockets, ports).
pub type SettingsKey = BTreeMap<String, String>;

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
    /// The settings each linked agent last asked for, by agent address.
    asked: Mutex<BTreeMap<String, SettingsKey>>,
    /// Told each time the settings most agents ask for change (see
    /// [`Renders::cycle_renderer_changes`]).
    cycle_renderer_changed: watch::Sender<()>,
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
            asked: Mutex::default(),
            cycle_renderer_changed: watch::Sender::new(()),
        })
    }

    /// Notes the settings the agent at `agent` asks for.
    pub fn asked_by(&self, agent: &str, settings: &SettingsKey) {
        self.update_asked(|asked| {
            if asked.get(agent) == Some(settings) {
                return false;
            }
            asked.insert(agent.to_string(), settings.clone());
            true
        });
    }

    /// Forgets an agent that left the fleet.
    pub fn forget(&self, agent: &str) {
        self.update_asked(|asked| asked.remove(agent).is_some());
    }

    /// Changes `asked` (`update` says whether it did), telling
    /// [`Renders::cycle_renderer_changes`] when the settings most agents
    /// ask for changed with it.
    fn update_asked(&self, update: impl FnOnce(&mut BTreeMap<String, SettingsKey>) -> bool) {
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        let before = most_asked(&asked);
        if update(&mut asked) && most_asked(&asked) != before {
            self.cycle_renderer_changed.send_replace(());
        }
    }

    /// Changes each time [`Renders::cycle_renderer`] would give another
    /// renderer: when the first agent says what it asks for (a controller
    /// start renders before any agent could), and when what most agents
    /// ask for changes. The source renders again at once, so that no
    /// change pays for the first render, and the first check, under the
    /// new settings (docs/benchmarks.md, "The first render for the
    /// agents' settings").
    pub fn cycle_renderer_changes(&self) -> watch::Receiver<()> {
        self.cycle_renderer_changed.subscribe()
    }

    fn most_asked(&self) -> Option<SettingsKey> {
        most_asked(&self.asked.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The renderer the render cycle should render with: `base` (the
    /// source's, under the controller's configuration) with the settings
    /// most agents ask for, so that its render, judged and reported, is
    /// the one those agents receive. `None` while no agent has said what it
    /// asks for, or when its settings cannot apply: then `base`.
    pub fn cycle_renderer(&self, base: &Renderer) -> Option<Arc<Renderer>> {
        let settings = self.most_asked()?;
        match self.renderer(base.config(), &settings) {
            Ok(renderer) => Some(renderer),
            Err(error) => {
                tracing::warn!("rendering for the controller's own settings: {error}");
                None
            }
        }
    }

    /// The render of `snapshot` for an agent asking for `settings`.
    pub fn build(
        &self,
        snapshot: &Snapshot,
        settings: &SettingsKey,
    ) -> Result<Arc<Built>, BuildError> {
        let previous = self
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(settings)
            .cloned();
        if let Some(built) = previous
            .as_ref()
            .filter(|b| b.generation == snapshot.generation)
        {
            return Ok(Arc::clone(built));
        }
        let renderer = self.renderer(&snapshot.config, settings)?;
        let rendered = match &snapshot.rendered {
            // The cycle rendered for these settings already.
            Some(rendered) if *rendered.config == **renderer.config() => Arc::clone(rendered),
            _ => Arc::new(
                renderer
                    .render_after(&snapshot.store, previous.as_ref().map(|b| b.plan()))
                    .map_err(BuildError::Render)?,
            ),
        };
        let mut digests = Digests::new(&rendered, previous.as_deref());
        let mut paths = HashMap::new();
        let files = rendered
            .files
            .iter()
            .map(|(path, file)| {
                let d = digests.of(path, &file.content);
                paths.entry(d.clone()).or_insert_with(|| path.to_string());
                v1::FileEntry {
                    path: path.to_string(),
                    digest: d,
                    kind: file.kind.name().to_string(),
                }
            })
            .collect();
        let earlier = previous.as_deref().map(|b| (b.plan(), &b.encoded_plan));
        let encoded_plan = encode_after(&rendered.plan, earlier)?;
        // Comparing costs a fraction of hashing, and most changes leave
        // the plan as it was.
        let plan_digest = match &previous {
            Some(b) if b.encoded_plan.bytes == encoded_plan.bytes => b.plan_digest.clone(),
            _ => digest(&encoded_plan.bytes),
        };
        let built = Arc::new(Built {
            generation: snapshot.generation,
            files,
            plan_digest,
            plan_format: PLAN_FORMAT,
            encoded_plan,
            rendered,
            paths,
            earlier: previous.map(|b| Earlier {
                rendered: Arc::clone(&b.rendered),
                paths: b.paths.clone(),
            }),
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

/// The settings most agents ask for (the smallest of equals), `None`
/// before any agent said.
fn most_asked(asked: &BTreeMap<String, SettingsKey>) -> Option<SettingsKey> {
    let mut counts: BTreeMap<&SettingsKey, usize> = BTreeMap::new();
    for settings in asked.values() {
        *counts.entry(settings).or_default() += 1;
    }
    let most = counts.values().copied().max()?;
    counts
        .into_iter()
        .find(|(_, count)| *count == most)
        .map(|(settings, _)| settings.clone())
}

#[cfg(test)]
mod tests;
