//! Renders per agent settings, and what a render looks like on the wire.
//!
//! One render per generation and set of agent settings: the render cycle
//! renders under the settings most agents ask for ([`Renders::cycle_renderer`]),
//! and a link whose agent asks for those settings takes that render as it
//! is ([`Renders::build`]); only an agent asking for other settings costs a
//! render of its own, shared with every agent asking for the same.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use hawser_plan::{PLAN_FORMAT, PlanFormatError, digest, encode};
use hawser_proto::v1;
use hawser_render::{CertificatePem, RenderConfig, RenderError, Rendered, Renderer};

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
    /// The plan itself: the next render for the same settings follows it,
    /// keeping its backends (see `Renderer::render_after`).
    pub plan: hawser_plan::Plan,
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
        })
    }

    /// Notes the settings the agent at `agent` asks for.
    pub fn asked_by(&self, agent: &str, settings: &SettingsKey) {
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        if asked.get(agent) != Some(settings) {
            asked.insert(agent.to_string(), settings.clone());
        }
    }

    /// Forgets an agent that left the fleet.
    pub fn forget(&self, agent: &str) {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(agent);
    }

    /// The settings most agents ask for (the smallest of equals), `None`
    /// before any agent said.
    fn most_asked(&self) -> Option<SettingsKey> {
        let asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
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
        let fresh;
        let rendered: &Rendered = match &snapshot.rendered {
            // The cycle rendered for these settings already.
            Some(rendered) if *rendered.config == **renderer.config() => rendered,
            _ => {
                fresh = renderer
                    .render_after(&snapshot.store, previous.as_ref().map(|b| &b.plan))
                    .map_err(BuildError::Render)?;
                &fresh
            }
        };
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
            plan: rendered.plan.clone(),
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
            rendered: None,
            served: Arc::default(),
            rejected: Arc::default(),
        }
    }

    /// Renders under the default configuration, with a generated default
    /// certificate.
    fn renders() -> Renders {
        Renders::new(
            RenderConfig::default(),
            generate_default_certificate().unwrap(),
        )
        .unwrap()
    }

    fn config_text(built: &Built) -> String {
        let entry = built.files.iter().find(|f| f.path == CONFIG_PATH).unwrap();
        String::from_utf8(built.blobs[&entry.digest].clone()).unwrap()
    }

    #[test]
    fn each_agent_render_follows_the_snapshot_configuration() {
        let renders = renders();
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

    /// An IngressClass, and per name a Service with one pod and an Ingress.
    fn apps(names: &[&str]) -> Arc<hawser_model::Store> {
        let mut yaml = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: { name: hawser }\nspec: { controller: hawser.dev/ingress-controller }\n".to_string();
        for (i, name) in names.iter().enumerate() {
            yaml.push_str(&format!(
                "---\napiVersion: v1\nkind: Service\nmetadata: {{ name: {name}, namespace: app }}\nspec: {{ ports: [{{ port: 80 }}] }}\n\
                 ---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}-1\n  namespace: app\n  labels: {{ kubernetes.io/service-name: {name} }}\n\
                 addressType: IPv4\nports: [{{ port: 80 }}]\nendpoints: [{{ addresses: [\"10.0.0.{}\"] }}]\n\
                 ---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: {name}, namespace: app }}\n\
                 spec:\n  ingressClassName: hawser\n  rules: [{{ host: {name}.example, http: {{ paths: [{{ path: /, pathType: Prefix, backend: {{ service: {{ name: {name}, port: {{ number: 80 }} }} }} }}] }} }}]\n",
                i + 1
            ));
        }
        Arc::new(crate::test_store::store_of(&yaml))
    }

    #[test]
    fn an_agent_render_follows_the_last_so_a_new_service_borrows_a_spare() {
        let renders = renders();
        let agent = settings(&[("httpsPort", "9443")]);
        let first = Snapshot {
            store: apps(&["web"]),
            ..snapshot(1, RenderConfig::default())
        };
        let first = renders.build(&first, &agent).unwrap();
        let second = Snapshot {
            store: apps(&["web", "new"]),
            ..snapshot(2, RenderConfig::default())
        };
        let second = renders.build(&second, &agent).unwrap();
        assert_eq!(
            second.plan.structure_digest, first.plan.structure_digest,
            "no reload for the agent"
        );
        assert!(
            second
                .plan
                .backends
                .iter()
                .any(|b| b.role.lent_to() == Some("be_app_new_80")),
            "{:#?}",
            second.plan.backends
        );
    }

    fn settings(pairs: &[(&str, &str)]) -> SettingsKey {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_cycle_renders_for_the_settings_most_agents_ask_for() {
        let certificate = generate_default_certificate().unwrap();
        let renders = Renders::new(RenderConfig::default(), certificate.clone()).unwrap();
        let base = Renderer::new(RenderConfig::default())
            .unwrap()
            .with_default_certificate(certificate);
        assert!(
            renders.cycle_renderer(&base).is_none(),
            "no agent has said what it asks for"
        );
        let common = settings(&[("httpsPort", "9443")]);
        renders.asked_by("a", &common);
        renders.asked_by("b", &settings(&[("httpsPort", "9444")]));
        renders.asked_by("c", &common);
        let cycle = renders.cycle_renderer(&base).unwrap();
        assert_eq!(cycle.config().settings.https_port, 9443);

        renders.forget("a");
        renders.forget("c");
        let cycle = renders.cycle_renderer(&base).unwrap();
        assert_eq!(cycle.config().settings.https_port, 9444);
    }

    #[test]
    fn agents_asking_for_the_cycle_settings_take_its_render_as_it_is() {
        let certificate = generate_default_certificate().unwrap();
        let renders = Renders::new(RenderConfig::default(), certificate.clone()).unwrap();
        let base = Renderer::new(RenderConfig::default())
            .unwrap()
            .with_default_certificate(certificate);
        let common = settings(&[("httpsPort", "9443")]);
        renders.asked_by("a", &common);
        let cycle = renders.cycle_renderer(&base).unwrap();
        let mut rendered = cycle.render(&hawser_model::Store::default()).unwrap();
        // Marks the cycle's render: a render of the store would not have it.
        rendered
            .files
            .insert("maps/marked.map", hawser_plan::FileKind::Map, "cycle\n");
        let snapshot = Snapshot {
            rendered: Some(Arc::new(rendered)),
            ..snapshot(1, RenderConfig::default())
        };
        let marked = |built: &Built| built.files.iter().any(|f| f.path == "maps/marked.map");

        let shared = renders.build(&snapshot, &common).unwrap();
        assert!(marked(&shared), "the cycle's render is pushed as it is");
        assert!(config_text(&shared).contains(":9443 ssl"));

        let other = renders
            .build(&snapshot, &settings(&[("httpsPort", "9444")]))
            .unwrap();
        assert!(!marked(&other), "other settings get a render of their own");
        assert!(config_text(&other).contains(":9444 ssl"));
    }
}
