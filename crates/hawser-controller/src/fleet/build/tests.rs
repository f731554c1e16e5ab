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
    String::from_utf8(built.blob(&entry.digest).unwrap().to_vec()).unwrap()
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
        second.plan().structure_digest,
        first.plan().structure_digest,
        "no reload for the agent"
    );
    assert!(
        second
            .plan()
            .backends
            .iter()
            .any(|b| b.role.lent_to() == Some("be_app_new_80")),
        "{:#?}",
        second.plan().backends
    );
}

/// Every file of `built` is named by the SHA-256 of its content, and
/// one blob per content: the route map's twin is the route map's blob.
fn expect_named_by_content(built: &Built) {
    for file in &built.files {
        let content = built.blob(&file.digest).unwrap();
        assert_eq!(file.digest, digest(content), "{}", file.path);
        assert_eq!(
            content,
            built
                .rendered
                .files
                .get(&file.path)
                .unwrap()
                .content
                .as_slice(),
            "{}",
            file.path
        );
    }
    let of = |path: &str| &built.files.iter().find(|f| f.path == path).unwrap().digest;
    assert_eq!(
        of(hawser_plan::ROUTES_MAP_PATH),
        of(hawser_plan::ROUTES_TWIN_MAP_PATH)
    );
    let files: std::collections::BTreeSet<&String> =
        built.files.iter().map(|f| &f.digest).collect();
    assert_eq!(
        built.digests().count(),
        files.len() + 1,
        "one blob per content, and the plan"
    );
    assert_eq!(
        digest(built.blob(&built.plan_digest).unwrap()),
        built.plan_digest
    );
}

#[test]
fn digests_kept_from_the_last_build_name_what_the_files_hold_now() {
    let renders = renders();
    let agent = settings(&[("httpsPort", "9443")]);
    let mut last = None;
    for (generation, names) in [(1, &["web"][..]), (2, &["web", "new"]), (3, &["new"])] {
        let snapshot = Snapshot {
            store: apps(names),
            ..snapshot(generation, RenderConfig::default())
        };
        let built = renders.build(&snapshot, &agent).unwrap();
        expect_named_by_content(&built);
        if let Some(last) = &last {
            let last: &Arc<Built> = last;
            assert_ne!(
                last.files
                    .iter()
                    .find(|f| f.path == hawser_plan::ROUTES_MAP_PATH),
                built
                    .files
                    .iter()
                    .find(|f| f.path == hawser_plan::ROUTES_MAP_PATH),
                "the routes changed"
            );
        }
        last = Some(built);
    }
}

/// Renders one agent asked `settings` of, and the cycle's renderer for them.
fn asked_for(settings: &SettingsKey) -> (Renders, Arc<Renderer>) {
    let certificate = generate_default_certificate().unwrap();
    let renders = Renders::new(RenderConfig::default(), certificate.clone()).unwrap();
    let base = Renderer::new(RenderConfig::default())
        .unwrap()
        .with_default_certificate(certificate);
    renders.asked_by("a", settings);
    let cycle = renders.cycle_renderer(&base).unwrap();
    (renders, cycle)
}

#[test]
fn a_build_shares_the_cycle_render_instead_of_copying_it() {
    let common = settings(&[("httpsPort", "9443")]);
    let (renders, cycle) = asked_for(&common);
    let rendered = Arc::new(cycle.render(&apps(&["web"])).unwrap());
    let snapshot = Snapshot {
        rendered: Some(Arc::clone(&rendered)),
        ..snapshot(1, RenderConfig::default())
    };
    let built = renders.build(&snapshot, &common).unwrap();
    assert!(Arc::ptr_eq(&built.rendered, &rendered));
    expect_named_by_content(&built);
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
fn the_cycle_renderer_changes_when_what_most_agents_ask_for_changes() {
    let renders = Renders::new(
        RenderConfig::default(),
        generate_default_certificate().unwrap(),
    )
    .unwrap();
    let mut changes = renders.cycle_renderer_changes();
    let common = settings(&[("httpsPort", "9443")]);
    renders.asked_by("a", &common);
    assert!(changes.has_changed().unwrap(), "the first agent said");
    changes.mark_unchanged();

    renders.asked_by("a", &common);
    renders.asked_by("b", &common);
    renders.asked_by("c", &settings(&[("httpsPort", "9444")]));
    renders.forget("c");
    assert!(
        !changes.has_changed().unwrap(),
        "most agents still ask for the same"
    );

    renders.forget("a");
    renders.forget("b");
    assert!(changes.has_changed().unwrap(), "no agent asks any more");
}

#[test]
fn agents_asking_for_the_cycle_settings_take_its_render_as_it_is() {
    let common = settings(&[("httpsPort", "9443")]);
    let (renders, cycle) = asked_for(&common);
    let mut rendered = cycle.render(&hawser_model::Store::default()).unwrap();
    // Marks the cycle's render: a render of the store would not have it.
    Arc::make_mut(&mut rendered.files).insert(
        "maps/marked.map",
        hawser_plan::FileKind::Map,
        "cycle\n",
    );
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

#[test]
fn a_changed_file_is_given_as_an_edit_of_the_one_the_render_before_had() {
    let renders = renders();
    let agent = settings(&[("httpsPort", "9443")]);
    let names: Vec<String> = (0..20).map(|i| format!("app{i:02}")).collect();
    let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
    let build = |generation, names: &[&str]| {
        let snapshot = Snapshot {
            store: apps(names),
            ..snapshot(generation, RenderConfig::default())
        };
        renders.build(&snapshot, &agent).unwrap()
    };
    let routes = |built: &Built| {
        built
            .files
            .iter()
            .find(|f| f.path == hawser_plan::ROUTES_MAP_PATH)
            .unwrap()
            .digest
            .clone()
    };
    let first = build(1, &names);
    assert_eq!(
        first.edit(&routes(&first), &routes(&first)),
        None,
        "no render before the first"
    );
    names.push("added");
    let second = build(2, &names);
    let edit = second.edit(&routes(&second), &routes(&first)).unwrap();
    let made = blob_edit::apply(first.blob(&routes(&first)).unwrap(), &edit).unwrap();
    assert_eq!(made, second.blob(&routes(&second)).unwrap());
    assert_eq!(edit.removed_lines, 0);
    assert!(
        String::from_utf8(edit.inserted.clone())
            .unwrap()
            .starts_with("added.example/ "),
        "{edit:?}"
    );
    // Only the render just before is kept.
    let third = build(3, &names[1..]);
    assert!(third.edit(&routes(&third), &routes(&second)).is_some());
    assert_eq!(third.edit(&routes(&third), &routes(&first)), None);
}
