//! A render that reuses what the renderer kept from the last one is the
//! render a new renderer makes of the same store.
//!
//! Oracle: after each of many pseudo-random changes (Ingresses added,
//! removed and changed, Service ports, annotations and endpoints, Secrets,
//! settings), one long-lived renderer renders the store after its last
//! plan, and a renderer made for that render alone, with nothing kept,
//! renders the same store after the same plan; every file, the plan
//! (structure digest included) and the diagnostics must be byte-identical.

use hawser_model::{
    Endpoint, Ingress, IngressBackend, IngressPath, IngressRule, Kind, Object, ObjectKey,
    ObjectRef, PathType, ServicePortRef, Store,
};
use hawser_plan::Plan;
use hawser_render::{RenderConfig, Rendered, Renderer};

use crate::support;

/// splitmix64: the same sequence of changes on every run.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[self.below(items.len())])
    }
}

/// Settings a change may switch to: the defaults, others that change
/// haproxy.cfg, and a snippet that writes every map's size into it (so a
/// route change changes haproxy.cfg too).
fn configs() -> Vec<RenderConfig> {
    let yaml = [
        "",
        "settings:\n  httpPort: 8080\n  spareBackends: 2\n",
        "settings:\n  spareBackends: 0\n  sslRedirect: false\n",
        "templates:\n  snippets:\n    sections-maps: |\n      {% for map in plan.maps %}\n      # {{ map.path }}: {{ map.entries | length }} entries, first {{ (map.entries | first).key if map.entries else '-' }}\n      {% endfor %}\n",
    ];
    yaml.iter()
        .map(|y| RenderConfig::from_yaml(y).expect("config"))
        .collect()
}

fn ingress_keys(store: &Store) -> Vec<ObjectKey> {
    store.ingresses().map(|i| i.key.clone()).collect()
}

fn service_keys(store: &Store) -> Vec<ObjectKey> {
    store.services().map(|s| s.key.clone()).collect()
}

/// One pseudo-random change of `store`; `removed` holds objects taken out,
/// which a later change may bring back.
/// A copy of an Ingress picked among `keys`, to change; none when there is none.
fn picked_ingress(store: &Store, keys: &[ObjectKey], random: &mut Random) -> Option<Ingress> {
    let key = random.pick(keys)?;
    store.ingresses().find(|i| &i.key == key).cloned()
}

fn change(store: &mut Store, removed: &mut Vec<Object>, random: &mut Random) -> String {
    let ingresses = ingress_keys(store);
    let services = service_keys(store);
    match random.below(11) {
        0 | 1 => {
            let Some(mut ingress) = picked_ingress(store, &ingresses, random) else {
                return "nothing".into();
            };
            let key = ingress.key.clone();
            let service = random
                .pick(&services)
                .map_or("missing".to_string(), |s| s.name.clone());
            let path = IngressPath {
                path: Some(format!("/p{}", random.below(5))),
                path_type: if random.below(2) == 0 {
                    PathType::Prefix
                } else {
                    PathType::Exact
                },
                backend: IngressBackend::Service {
                    name: service,
                    port: ServicePortRef::Number(80),
                },
            };
            match ingress.rules.first_mut() {
                Some(rule) => rule.paths.push(path),
                None => ingress.rules.push(IngressRule {
                    host: Some(format!("h{}.example", random.below(4))),
                    paths: vec![path],
                }),
            }
            store.insert(Object::Ingress(ingress));
            format!("path added to {key}")
        }
        2 => {
            let Some(mut ingress) = picked_ingress(store, &ingresses, random) else {
                return "nothing".into();
            };
            let key = ingress.key.clone();
            for rule in &mut ingress.rules {
                rule.paths.pop();
            }
            store.insert(Object::Ingress(ingress));
            format!("path removed from {key}")
        }
        3 => {
            let Some(mut ingress) = picked_ingress(store, &ingresses, random) else {
                return "nothing".into();
            };
            let key = ingress.key.clone();
            // Some of these make an Ingress's routes depend on others'
            // or on claim order, which a kept routing table must see.
            let toggles = [
                ("hawser.dev/ssl-redirect", "false"),
                ("hawser.dev/hsts", "false"),
                ("hawser.dev/allow-list", "10.0.0.0/8"),
                ("hawser.dev/proxy-body-size", "1m"),
                ("hawser.dev/backend-protocol", "HTTPS"),
                ("hawser.dev/use-regex", "true"),
                ("hawser.dev/rewrite-target", "/"),
                ("hawser.dev/server-alias", "h1.example"),
                ("hawser.dev/from-to-www-redirect", "true"),
                ("hawser.dev/ssl-passthrough", "true"),
                ("hawser.dev/canary", "true"),
            ];
            // Or annotations that read other objects: a Service (external
            // authentication), a Secret (users, a client CA).
            let service = random.pick(&services).cloned();
            let secret = store
                .secrets()
                .find(|s| s.key.namespace == key.namespace)
                .map(|s| s.key.name.clone());
            let (name, value) = match (random.below(toggles.len() + 3), service, secret) {
                (n, Some(service), _) if n == toggles.len() => (
                    "hawser.dev/auth-url",
                    format!("http://{}.{}.svc/check", service.name, service.namespace),
                ),
                (n, _, Some(secret)) if n == toggles.len() + 1 => {
                    ingress
                        .annotations
                        .insert("hawser.dev/auth-type".into(), "basic".into());
                    ("hawser.dev/auth-secret", secret)
                }
                (n, _, Some(secret)) if n == toggles.len() + 2 => {
                    ("hawser.dev/client-auth-secret", secret)
                }
                (n, ..) => {
                    let (name, value) = toggles[n % toggles.len()];
                    (name, value.to_string())
                }
            };
            if ingress.annotations.remove(name).is_none() {
                ingress.annotations.insert(name.into(), value);
            }
            if let Some(rule) = ingress.rules.first_mut()
                && random.below(3) == 0
            {
                rule.host = Some(format!("h{}.example", random.below(4)));
            }
            store.insert(Object::Ingress(ingress));
            format!("{key} annotated or moved")
        }
        4 => {
            let Some(key) = random.pick(&ingresses) else {
                return "nothing".into();
            };
            let gone = store.remove(&ObjectRef::new(Kind::Ingress, key.clone()));
            removed.extend(gone);
            format!("Ingress {key} removed")
        }
        5 => match removed.pop() {
            Some(object) => {
                let what = object.object_ref().to_string();
                store.insert(object);
                format!("{what} back")
            }
            None => "nothing".into(),
        },
        6 => {
            let Some(key) = random.pick(&services) else {
                return "nothing".into();
            };
            let mut service = store.service(key).expect("listed").clone();
            if let Some(port) = service.ports.first_mut() {
                port.port = if port.port == 80 { 81 } else { 80 };
            }
            store.insert(Object::Service(service));
            format!("Service {key} port changed")
        }
        10 => {
            // Backend settings: a backend kept from the last render is
            // made of its Service's annotations too.
            let Some(key) = random.pick(&services) else {
                return "nothing".into();
            };
            let mut service = store.service(key).expect("listed").clone();
            let toggles = [
                ("hawser.dev/balance", "leastconn"),
                ("hawser.dev/timeout-server", "7s"),
                ("hawser.dev/balance", "no-such-algorithm"),
            ];
            let (name, value) = toggles[random.below(toggles.len())];
            if service.annotations.remove(name).is_none() {
                service.annotations.insert(name.into(), value.into());
            }
            store.insert(Object::Service(service));
            format!("Service {key} annotated")
        }
        7 | 8 => {
            let Some(key) = random.pick(&services) else {
                return "nothing".into();
            };
            let Some(mut slice) = store.endpoint_slices_for(key).next().cloned() else {
                return "nothing".into();
            };
            match random.below(3) {
                0 => slice.endpoints.push(Endpoint {
                    addresses: vec![format!("10.9.{}.{}", random.below(9), random.below(250))],
                    ready: true,
                    serving: true,
                    terminating: false,
                    target: None,
                }),
                1 => {
                    slice.endpoints.pop();
                }
                _ => {
                    if let Some(endpoint) = slice.endpoints.first_mut() {
                        endpoint.ready = !endpoint.ready;
                    }
                }
            }
            store.insert(Object::EndpointSlice(slice));
            format!("endpoints of {key} changed")
        }
        _ => {
            let secrets: Vec<ObjectKey> = store
                .ingresses()
                .flat_map(|i| {
                    let namespace = i.key.namespace.clone();
                    i.tls.iter().filter_map(move |t| {
                        t.secret_name
                            .as_ref()
                            .map(|name| ObjectKey::new(&namespace, name))
                    })
                })
                .filter(|key| store.secret(key).is_some())
                .collect();
            let Some(key) = random.pick(&secrets) else {
                return "nothing".into();
            };
            let gone = store.remove(&ObjectRef::new(Kind::Secret, key.clone()));
            removed.extend(gone);
            format!("Secret {key} removed")
        }
    }
}

fn assert_identical(incremental: &Rendered, cold: &Rendered, step: &str) {
    for (path, file) in cold.files.iter() {
        assert_eq!(
            incremental.files.get(path),
            Some(file),
            "{step}: {path} differs"
        );
    }
    assert_eq!(incremental.files, cold.files, "{step}: files differ");
    assert_eq!(incremental.plan, cold.plan, "{step}: plans differ");
    assert_eq!(
        incremental.diagnostics, cold.diagnostics,
        "{step}: diagnostics differ"
    );
    assert_eq!(
        incremental.served_certificates, cold.served_certificates,
        "{step}: served certificates differ"
    );
}

/// Renders `store` after `previous` with `kept` and with a new renderer,
/// asserts they agree, and hands on the plan.
fn render_both(
    kept: &Renderer,
    config: &RenderConfig,
    store: &Store,
    previous: Option<&Plan>,
    step: &str,
) -> Plan {
    let incremental = kept.render_after(store, previous);
    let cold = support::renderer(config.clone()).render_after(store, previous);
    match (incremental, cold) {
        (Ok(incremental), Ok(cold)) => {
            assert_identical(&incremental, &cold, step);
            Plan::clone(&incremental.plan)
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{step}");
            previous.cloned().unwrap_or_default()
        }
        (a, b) => panic!("{step}: one render failed: {:?} / {:?}", a.err(), b.err()),
    }
}

#[test]
fn incremental_renders_equal_cold_renders_after_random_changes() {
    let configs = configs();
    let renderers: Vec<Renderer> = configs.iter().cloned().map(support::renderer).collect();
    let mut random = Random(0x5EED);
    for name in [
        "basic",
        "annotations",
        "conflicts",
        "tls",
        "endpoints",
        "hosts",
        "default-backend",
    ] {
        let case = support::render_case(name);
        let mut store = case.store;
        let mut removed = Vec::new();
        let mut current = 0;
        let mut previous = render_both(&renderers[current], &configs[current], &store, None, name);
        for step in 0..60 {
            let mut what = change(&mut store, &mut removed, &mut random);
            if random.below(12) == 0 {
                current = random.below(configs.len());
                what.push_str(&format!(", then settings {current}"));
            }
            let step = format!("{name} step {step}: {what}");
            // Now and then a render from scratch, as after a restart.
            let after = (random.below(8) != 0).then_some(&previous);
            previous = render_both(&renderers[current], &configs[current], &store, after, &step);
        }
    }
}

#[test]
fn a_template_reading_the_maps_sees_a_route_change() {
    let configs = configs();
    let reading = &configs[3];
    let renderer = support::renderer(reading.clone());
    let case = support::render_case("basic");
    let mut store = case.store;
    let first = renderer.render(&store).expect("first");
    let mut ingress = store.ingresses().next().expect("an Ingress").clone();
    let backend = ingress.rules[0].paths[0].backend.clone();
    ingress.rules[0].paths.push(IngressPath {
        path: Some("/added".into()),
        path_type: PathType::Exact,
        backend,
    });
    store.insert(Object::Ingress(ingress));
    let second = renderer
        .render_after(&store, Some(&first.plan))
        .expect("second");
    assert_ne!(
        first.files.text("haproxy.cfg"),
        second.files.text("haproxy.cfg"),
        "the snippet counts the routes"
    );
}
