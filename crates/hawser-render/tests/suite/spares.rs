//! Spare backends over whole renders: a Service that arrives after the
//! first render is served from a spare of its shape with the structure
//! digest unchanged (the agent needs no reload), one that goes leaves its
//! backend declared, and whatever needs a reload anyway refills the pools.

use hawser_model::Store;
use hawser_render::{BackendRole, RenderConfig, Rendered, SpareStatus};

use crate::support;

/// A Service `name` (port 80, one pod at `ip`) and an Ingress for
/// `<name>.example` routing to it, in namespace `shop`.
fn app(name: &str, ip: &str, annotations: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: shop
  annotations: {{ {annotations} }}
spec:
  ports: [{{ port: 80, targetPort: 8080 }}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {name}-1
  namespace: shop
  labels: {{ kubernetes.io/service-name: {name} }}
addressType: IPv4
ports: [{{ port: 8080 }}]
endpoints: [{{ addresses: ["{ip}"] }}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{ name: {name}, namespace: shop }}
spec:
  ingressClassName: hawser
  rules:
    - host: {name}.example
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: {{ service: {{ name: {name}, port: {{ number: 80 }} }} }}
"#
    )
}

const CLASS: &str = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: { name: hawser }\nspec: { controller: hawser.dev/ingress-controller }\n";

fn store(documents: &[String]) -> Store {
    let dir = tempfile::tempdir().unwrap();
    let text = std::iter::once(CLASS.to_string())
        .chain(documents.iter().cloned())
        .collect::<Vec<_>>()
        .join("---\n");
    std::fs::write(dir.path().join("all.yaml"), text).unwrap();
    let set = hawser_k8s::load_dir(dir.path()).unwrap();
    assert!(set.problems.is_empty(), "{:?}", set.problems);
    set.store
}

fn apps(names: &[&str]) -> Store {
    let documents: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, name)| app(name, &format!("10.0.0.{}", i + 1), ""))
        .collect();
    store(&documents)
}

fn config(yaml: &str) -> RenderConfig {
    RenderConfig::from_yaml(yaml).unwrap()
}

fn after(config: &RenderConfig, store: &Store, previous: &Rendered) -> Rendered {
    support::renderer(config.clone())
        .render_after(store, Some(&previous.plan))
        .unwrap()
}

fn role_of<'a>(rendered: &'a Rendered, backend: &str) -> &'a BackendRole {
    &rendered
        .plan
        .backends
        .iter()
        .find(|b| b.name == backend)
        .unwrap_or_else(|| panic!("{backend} is not declared"))
        .role
}

fn spare_of(rendered: &Rendered, backend: &str) -> Option<String> {
    let status = SpareStatus::of(&rendered.plan);
    let found = status.lent.iter().find(|(_, to)| to.backend == backend);
    found.map(|(spare, _)| spare.clone())
}

#[test]
fn a_new_service_is_served_from_a_spare_with_the_structure_unchanged() {
    let config = RenderConfig::default();
    let first = support::renderer(config.clone())
        .render(&apps(&["web"]))
        .unwrap();
    assert_eq!(SpareStatus::of(&first.plan).free, 32, "the default pool");
    let second = after(&config, &apps(&["web", "new"]), &first);

    assert_eq!(second.plan.structure_digest, first.plan.structure_digest);
    let spare = spare_of(&second, "be_shop_new_80").expect("lent a spare");
    let lent = second
        .plan
        .backends
        .iter()
        .find(|b| b.name == spare)
        .unwrap();
    assert_eq!(lent.servers[0].address, "10.0.0.2");
    let config_text = second.files.text("haproxy.cfg").unwrap();
    assert!(!config_text.contains("backend be_shop_new_80"));
    assert!(config_text.contains(&format!(
        "# from: Service shop/new port 80\nbackend {spare}\n"
    )));
    assert!(
        second
            .files
            .text("maps/routes.map")
            .unwrap()
            .contains("new.example/ be_shop_new_80")
    );
    assert_eq!(
        second.files.text("maps/spare_backends.map").unwrap().trim(),
        format!("be_shop_new_80 {spare}")
    );
    assert_eq!(SpareStatus::of(&second.plan).free, 31);

    // The same store rendered after itself changes nothing.
    let third = after(&config, &apps(&["web", "new"]), &second);
    assert_eq!((third.files, third.plan), (second.files, second.plan));
}

#[test]
fn a_service_that_goes_keeps_its_backend_declared_until_a_reload() {
    let config = RenderConfig::default();
    let first = support::renderer(config.clone())
        .render(&apps(&["web", "old"]))
        .unwrap();
    let second = after(&config, &apps(&["web"]), &first);
    assert_eq!(second.plan.structure_digest, first.plan.structure_digest);
    assert_eq!(role_of(&second, "be_shop_old_80"), &BackendRole::Retired);
    assert!(
        !second
            .files
            .text("maps/routes.map")
            .unwrap()
            .contains("old.example")
    );

    // Back again: its own backend, not a spare.
    let third = after(&config, &apps(&["web", "old"]), &second);
    assert_eq!(role_of(&third, "be_shop_old_80"), &BackendRole::Named);
    assert_eq!(third.plan.structure_digest, first.plan.structure_digest);
}

#[test]
fn a_pool_that_runs_dry_grows_at_the_reload_it_takes() {
    let config = config("settings:\n  spareBackends: 2\n");
    let first = support::renderer(config.clone())
        .render(&apps(&["a"]))
        .unwrap();
    let second = after(&config, &apps(&["a", "b"]), &first);
    let third = after(&config, &apps(&["a", "b", "c"]), &second);
    assert_eq!(third.plan.structure_digest, first.plan.structure_digest);
    assert_eq!(SpareStatus::of(&third.plan).free, 0);

    let fourth = after(&config, &apps(&["a", "b", "c", "d"]), &third);
    assert_ne!(fourth.plan.structure_digest, first.plan.structure_digest);
    for name in ["be_shop_b_80", "be_shop_c_80", "be_shop_d_80"] {
        assert_eq!(role_of(&fourth, name), &BackendRole::Named, "{name}");
    }
    let status = SpareStatus::of(&fourth.plan);
    assert_eq!(
        (status.free, status.lent.len()),
        (4, 0),
        "twice what ran dry"
    );
}

#[test]
fn a_change_that_reloads_anyway_refills_the_pools() {
    let config = RenderConfig::default();
    let first = support::renderer(config.clone())
        .render(&apps(&["a"]))
        .unwrap();
    let second = after(&config, &apps(&["a", "b"]), &first);
    assert!(spare_of(&second, "be_shop_b_80").is_some());

    // a asks for another balance algorithm: its backend changes shape.
    let changed = store(&[
        app("a", "10.0.0.1", "hawser.dev/balance: leastconn"),
        app("b", "10.0.0.2", ""),
    ]);
    let third = after(&config, &changed, &second);
    assert_ne!(third.plan.structure_digest, second.plan.structure_digest);
    assert_eq!(role_of(&third, "be_shop_b_80"), &BackendRole::Named);
    let status = SpareStatus::of(&third.plan);
    assert_eq!(
        (status.free, status.lent.len()),
        (32 + 4, 0),
        "a pool per shape in use"
    );
}

#[test]
fn a_backend_the_configuration_names_is_never_served_from_a_spare() {
    let config = RenderConfig::default();
    let first = support::renderer(config.clone())
        .render(&apps(&["a"]))
        .unwrap();
    // The default backend is named by `default_backend`, not through a map.
    let fallback = app("fallback", "10.0.0.9", "").replace(
        "  rules:",
        "  defaultBackend: { service: { name: fallback, port: { number: 80 } } }\n  rules:",
    );
    let second = after(
        &config,
        &store(&[app("a", "10.0.0.1", ""), fallback]),
        &first,
    );
    assert_eq!(role_of(&second, "be_shop_fallback_80"), &BackendRole::Named);
    assert!(
        second
            .files
            .text("haproxy.cfg")
            .unwrap()
            .contains("default_backend be_shop_fallback_80")
    );
}

#[test]
fn a_template_that_leaves_the_spares_map_out_gets_no_spares() {
    let config = config("templates:\n  overrides:\n    backends/spares.cfg: \"\"\n");
    let first = support::renderer(config.clone())
        .render(&apps(&["a"]))
        .unwrap();
    assert_eq!(SpareStatus::of(&first.plan), SpareStatus::default());
    let second = after(&config, &apps(&["a", "b"]), &first);
    assert_eq!(role_of(&second, "be_shop_b_80"), &BackendRole::Named);
}

#[test]
fn no_spares_when_turned_off() {
    let config = config("settings:\n  spareBackends: 0\n");
    let first = support::renderer(config.clone())
        .render(&apps(&["a"]))
        .unwrap();
    assert_eq!(first.plan.backends.len(), 1);
    let second = after(&config, &apps(&["a", "b"]), &first);
    assert_ne!(second.plan.structure_digest, first.plan.structure_digest);
}
