//! The cluster source and agent discovery against the fake API server, with
//! the real kube-rs client and watchers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hawser_fake_api::FakeApi;
use hawser_model::{Kind, ObjectKey, Store};
use hawser_plan::Generation;
use hawser_render::{RenderConfig, Renderer, generate_default_certificate};
use http::Method;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::*;
use crate::cycle::{ControllerStatus, Deliver};

/// Long enough for kube's watcher backoff (0.8 s, then 1.6 s, jittered) to
/// retry a few times; never reached when things work.
const PATIENCE: Duration = Duration::from_secs(30);

fn object<K: serde::de::DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).unwrap()
}

fn ingress(name: &str, host: &str, tls_secret: Option<&str>) -> networking::Ingress {
    let tls: Vec<Value> = tls_secret
        .map(|secret| json!({"hosts": [host], "secretName": secret}))
        .into_iter()
        .collect();
    object(json!({
        "metadata": {"name": name, "namespace": "app"},
        "spec": {
            "ingressClassName": "hawser",
            "tls": tls,
            "rules": [{"host": host, "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}},
            }]}}],
        },
    }))
}

fn tls_secret(name: &str) -> core::Secret {
    let pem = generate_default_certificate().unwrap();
    let mut secret: core::Secret = object(json!({
        "metadata": {"name": name, "namespace": "app"},
        "type": "kubernetes.io/tls",
    }));
    secret.data = Some(
        [
            (
                "tls.crt".to_string(),
                k8s_openapi::ByteString(pem.as_bytes().to_vec()),
            ),
            (
                "tls.key".to_string(),
                k8s_openapi::ByteString(pem.as_bytes().to_vec()),
            ),
        ]
        .into(),
    );
    secret
}

/// An IngressClass, a Service and its EndpointSlice: what every test's
/// Ingresses route to.
fn apply_backend(fake: &FakeApi) {
    fake.apply::<networking::IngressClass>(&object(json!({
        "metadata": {"name": "hawser"},
        "spec": {"controller": "hawser.dev/ingress-controller"},
    })));
    fake.apply::<core::Service>(&object(json!({
        "metadata": {"name": "web", "namespace": "app"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}]},
    })));
    fake.apply::<discovery::EndpointSlice>(&object(json!({
        "metadata": {
            "name": "web-1", "namespace": "app",
            "labels": {"kubernetes.io/service-name": "web"},
        },
        "addressType": "IPv4",
        "ports": [{"port": 8080}],
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}],
    })));
}

type Delivery = (Generation, Arc<Store>, Arc<RenderConfig>);

/// Where the source delivers, every store it renders, and the renderer
/// its agents ask for (`None`: the source's own).
#[derive(Debug, Clone)]
struct Deliveries(
    mpsc::UnboundedSender<Delivery>,
    Arc<watch::Sender<Option<crate::fleet::RenderedStore>>>,
    Arc<watch::Sender<Option<Arc<Renderer>>>>,
);

impl Deliver for Deliveries {
    fn renderer(&self, _base: &Renderer) -> Option<Arc<Renderer>> {
        self.2.borrow().clone()
    }

    fn renderer_changes(&self) -> Option<watch::Receiver<()>> {
        // Every change of the agents' renderer, as a change of nothing.
        let mut agents = self.2.subscribe();
        let (changed, changes) = watch::channel(());
        tokio::spawn(async move {
            while agents.changed().await.is_ok() {
                changed.send_replace(());
            }
        });
        Some(changes)
    }

    fn deliver(&self, render: &crate::cycle::CycleRender) {
        let _ = self.0.send((
            render.generation,
            Arc::clone(&render.store),
            Arc::clone(&render.rendered.config),
        ));
    }

    fn rendered(&self, render: &crate::cycle::CycleRender) {
        self.1
            .send_replace(Some(crate::fleet::RenderedStore::of(render)));
    }
}

/// A running cluster source and what it delivers.
struct Source {
    deliveries: mpsc::UnboundedReceiver<Delivery>,
    /// The configuration of the newest delivery.
    config: Arc<RenderConfig>,
    /// Changes the source's configuration, as a HawserConfig change does.
    configure: watch::Sender<SourceConfig>,
    /// Every store rendered, delivered or not.
    stores: watch::Receiver<Option<crate::fleet::RenderedStore>>,
    /// What the agents ask for, as the fleet tells the source.
    agents_renderer: Arc<watch::Sender<Option<Arc<Renderer>>>>,
    status: watch::Receiver<ControllerStatus>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Source {
    fn start(client: ::kube::Client, options: KubeSourceOptions) -> Source {
        let renderer = Renderer::new(RenderConfig::default()).unwrap();
        Source::start_with(
            client,
            SourceConfig {
                renderer: Some(Arc::new(renderer)),
                options,
            },
        )
    }

    fn start_with(client: ::kube::Client, config: SourceConfig) -> Source {
        let (tx, deliveries) = mpsc::unbounded_channel();
        let (stores_tx, stores) = watch::channel(None);
        let (status_tx, status) = watch::channel(ControllerStatus::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let (configure, config) = watch::channel(config);
        let agents_renderer = Arc::new(watch::Sender::new(None));
        let task = tokio::spawn(run_kube(
            client,
            config,
            Deliveries(tx, Arc::new(stores_tx), Arc::clone(&agents_renderer)),
            Generation::new(1),
            None,
            status_tx,
            async move {
                let _ = stopped.await;
            },
        ));
        Source {
            deliveries,
            config: Arc::default(),
            configure,
            stores,
            agents_renderer,
            status,
            stop: Some(stop),
            task,
        }
    }

    async fn next_delivery(&mut self) -> (Generation, Arc<Store>) {
        let (generation, store, config) = tokio::time::timeout(PATIENCE, self.deliveries.recv())
            .await
            .expect("no render was delivered in time")
            .expect("the source stopped");
        self.config = config;
        // The cycle counts a render in its status once what the render
        // woke has run.
        tokio::time::timeout(
            PATIENCE,
            self.status
                .wait_for(|s| s.generation.is_some_and(|counted| counted >= generation)),
        )
        .await
        .expect("the delivered render was not counted in time")
        .expect("the source stopped");
        (generation, store)
    }

    /// The first delivered store that satisfies `check`.
    async fn delivery_where(&mut self, check: impl Fn(&Store) -> bool) -> (Generation, Arc<Store>) {
        loop {
            let (generation, store) = self.next_delivery().await;
            if check(&store) {
                return (generation, store);
            }
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(PATIENCE, self.task)
            .await
            .expect("the source did not stop")
            .unwrap();
    }
}

fn hosts(store: &Store) -> Vec<String> {
    store
        .ingresses()
        .map(|i| {
            let host = i.rules[0].host.clone().unwrap_or_default();
            format!("{}={host}", i.key.name)
        })
        .collect()
}

#[tokio::test]
async fn initial_list_then_watch_events_render_new_generations() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    let mut source = Source::start(client, KubeSourceOptions::default());

    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(1));
    assert_eq!(hosts(&store), ["a=a.example.com"]);
    assert!(store.service(&ObjectKey::new("app", "web")).is_some());
    assert_eq!(
        store
            .endpoint_slices_for(&ObjectKey::new("app", "web"))
            .count(),
        1
    );
    assert_eq!(store.ingress_classes().count(), 1);

    fake.apply(&ingress("b", "b.example.com", None));
    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(2));
    assert_eq!(hosts(&store), ["a=a.example.com", "b=b.example.com"]);

    fake.apply(&ingress("a", "new.example.com", None));
    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(3));
    assert_eq!(hosts(&store), ["a=new.example.com", "b=b.example.com"]);

    fake.delete::<networking::Ingress>("app", "a");
    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(4));
    assert_eq!(hosts(&store), ["b=b.example.com"]);

    let status = source.status.borrow().clone();
    assert_eq!(status.generation, Some(Generation::new(4)));
    let cluster = status.cluster.unwrap();
    // Five kinds for Ingresses, Namespaces and seven Gateway API kinds.
    assert_eq!(cluster.watches.len(), 13);
    assert!(cluster.watches.values().all(|w| w.synced && w.lists == 1));
    source.stop().await;
}

#[tokio::test]
async fn one_render_for_a_burst_of_changes() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    let mut source = Source::start(client, KubeSourceOptions::default());
    let (generation, _) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(1));
    for i in 0..20 {
        fake.apply(&ingress(
            &format!("i{i:02}"),
            &format!("h{i}.example.com"),
            None,
        ));
    }
    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(2));
    assert_eq!(store.ingresses().count(), 20);
    source.stop().await;
}

/// A Service applied with its EndpointSlice and its Ingress: when the
/// Service's watch event comes alone and is rendered at once, the objects
/// a moment later are the rest of the operation and render at once too,
/// the second and the third, without waiting for quiet. On paused time, a
/// wait for quiet shows as time passed.
#[tokio::test(start_paused = true)]
async fn the_rest_of_an_operation_renders_without_waiting_for_quiet() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    let mut source = Source::start(client, KubeSourceOptions::default());
    source.next_delivery().await;
    // Long enough after the first render that the next change is lone.
    tokio::time::sleep(crate::coalesce::BURST).await;

    fake.apply(&ingress("a", "a.example.com", None));
    let (generation, _) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(2));
    let began = tokio::time::Instant::now();
    fake.apply(&ingress("b", "b.example.com", None));
    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(3));
    assert_eq!(hosts(&store), ["a=a.example.com", "b=b.example.com"]);
    assert!(
        began.elapsed() < crate::coalesce::SETTLE,
        "the rest of the operation waited {:?} for quiet",
        began.elapsed()
    );
    let began = tokio::time::Instant::now();
    fake.apply(&ingress("c", "c.example.com", None));
    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(4));
    assert_eq!(store.ingresses().count(), 3);
    assert!(
        began.elapsed() < crate::coalesce::SETTLE,
        "the third object of the operation waited {:?} for quiet",
        began.elapsed()
    );
    source.stop().await;
}

/// A controller renders before any agent says what it asks for; once they
/// have, it renders for them again at once, its store as it is, rather
/// than with the next change (which would then wait for the first render
/// and check under the agents' settings).
#[tokio::test]
async fn agents_asking_for_other_settings_render_again_without_a_change() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    let mut source = Source::start(client, KubeSourceOptions::default());
    let (generation, first) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(1));
    assert_eq!(source.config.settings.https_port, 443);

    let mut asked = RenderConfig::default();
    asked.settings.https_port = 9443;
    let asked = Arc::new(Renderer::new(asked).unwrap());
    source.agents_renderer.send_replace(Some(asked));
    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(2));
    assert_eq!(source.config.settings.https_port, 9443);
    assert_eq!(hosts(&store), hosts(&first));
    source.stop().await;
}

#[tokio::test]
async fn watch_error_and_gone_relist_recover_what_changed_meanwhile() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    fake.apply(&ingress("b", "b.example.com", None));
    let mut source = Source::start(client, KubeSourceOptions::default());
    source.next_delivery().await;

    // The connection drops, the next watch fails, and while the source is
    // away objects change and the API server compacts its history: the
    // watchers' resourceVersions are too old (410), so they relist.
    fake.fail_next_watch();
    fake.break_watches();
    fake.apply(&ingress("a", "changed.example.com", None));
    fake.delete::<networking::Ingress>("app", "b");
    fake.apply(&ingress("c", "c.example.com", None));
    fake.compact();

    let (_, store) = source
        .delivery_where(|s| hosts(s) == ["a=changed.example.com", "c=c.example.com"])
        .await;
    assert!(store.service(&ObjectKey::new("app", "web")).is_some());
    assert_eq!(store.ingress_classes().count(), 1);

    // Every watch relists (each after its own backoff), and says so.
    let relisted = |s: &ControllerStatus| {
        s.cluster.as_ref().is_some_and(|c| {
            c.watches
                .values()
                .all(|w| w.lists >= 2 && w.errors >= 1 && w.last_error.is_none())
        })
    };
    let mut status = source.status.clone();
    let all_relisted = tokio::time::timeout(PATIENCE, status.wait_for(relisted))
        .await
        .is_ok();
    assert!(all_relisted, "{:#?}", source.status.borrow().cluster);
    let failed = fake
        .requests()
        .iter()
        .filter(|(m, p)| *m == Method::GET && p.contains("watch=true"))
        .count();
    assert!(failed >= 10, "five watches, then five re-watches");

    // And it keeps watching.
    fake.apply(&ingress("d", "d.example.com", None));
    source
        .delivery_where(|s| hosts(s).contains(&"d=d.example.com".to_string()))
        .await;
    source.stop().await;
}

#[tokio::test]
async fn managed_fields_and_last_applied_are_never_kept() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    let mut bulky = serde_json::to_value(ingress("a", "a.example.com", None)).unwrap();
    bulky["metadata"]["annotations"] = json!({
        LAST_APPLIED_ANNOTATION: "{\"a whole copy\": true}",
        "hawser.dev/balance": "leastconn",
    });
    bulky["metadata"]["managedFields"] = json!([{
        "manager": "kubectl", "operation": "Apply", "apiVersion": "networking.k8s.io/v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}},
    }]);
    fake.apply_value::<networking::Ingress>(bulky);
    // The API server holds them; the source must not.
    let stored = fake.get::<networking::Ingress>("app", "a").unwrap();
    assert!(stored.metadata.managed_fields.is_some());

    let mut source = Source::start(client, KubeSourceOptions::default());
    let (_, store) = source.next_delivery().await;
    let ingress = store.ingresses().next().unwrap();
    assert_eq!(
        ingress.annotations.keys().collect::<Vec<_>>(),
        ["hawser.dev/balance"]
    );
    source.stop().await;
}

#[test]
fn trim_drops_managed_fields_and_last_applied() {
    let mut meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta = object(json!({
        "name": "a",
        "annotations": {LAST_APPLIED_ANNOTATION: "{}", "keep": "me"},
        "managedFields": [{"manager": "kubectl"}],
    }));
    super::watch::trim(&mut meta);
    assert!(meta.managed_fields.is_none());
    assert_eq!(
        meta.annotations.unwrap(),
        BTreeMap::from([("keep".to_string(), "me".to_string())])
    );
}

#[tokio::test]
async fn secret_data_is_kept_only_while_an_ingress_refers_to_it() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&tls_secret("used"));
    fake.apply(&tls_secret("spare"));
    let mut opaque = tls_secret("opaque");
    opaque.type_ = Some("Opaque".into());
    fake.apply(&opaque);
    fake.apply(&ingress("a", "a.example.com", Some("used")));
    let mut source = Source::start(client, KubeSourceOptions::default());

    let with_data = |store: &Store, name: &str| {
        store
            .secret(&ObjectKey::new("app", name))
            .is_some_and(|s| s.tls_crt.is_some() && s.tls_key.is_some())
    };
    let (_, store) = source.next_delivery().await;
    assert!(with_data(&store, "used"));
    assert!(store.secret(&ObjectKey::new("app", "spare")).is_none());
    assert!(store.secret(&ObjectKey::new("app", "opaque")).is_none());
    let secret_watches: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|(_, p)| p.starts_with("/api/v1/secrets"))
        .map(|(_, p)| p)
        .collect();
    assert!(
        secret_watches.iter().all(|p| p.contains(
            "fieldSelector=type%21%3Dhelm.sh%2Frelease.v1%2Ctype%21%3Dkubernetes.io%2Fservice-account-token"
        )),
        "{secret_watches:#?}"
    );

    // An Ingress starts to refer to the spare Secret: its data is read once.
    fake.clear_requests();
    fake.apply(&ingress("b", "b.example.com", Some("spare")));
    let (_, store) = source.delivery_where(|s| with_data(s, "spare")).await;
    assert!(with_data(&store, "used"));
    assert!(
        fake.requests().contains(&(
            Method::GET,
            "/api/v1/namespaces/app/secrets/spare".to_string()
        )),
        "{:#?}",
        fake.requests()
    );

    // No Ingress refers to `used` any more: its data goes.
    fake.apply(&ingress("a", "a.example.com", None));
    let (_, store) = source
        .delivery_where(|s| s.secret(&ObjectKey::new("app", "used")).is_none())
        .await;
    assert!(with_data(&store, "spare"));
    assert_eq!(
        source
            .status
            .borrow()
            .cluster
            .as_ref()
            .unwrap()
            .secrets_with_data,
        1
    );
    source.stop().await;
}

/// The htpasswd Secret an Ingress's basic authentication names is kept
/// with its users, whatever its type; others lose their data.
#[tokio::test]
async fn the_users_secret_of_basic_auth_is_kept_while_an_ingress_names_it() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    for name in ["users", "unnamed"] {
        let mut secret: core::Secret = object(json!({
            "metadata": {"name": name, "namespace": "app"},
            "type": "Opaque",
        }));
        secret.data = Some(
            [(
                "auth".to_string(),
                k8s_openapi::ByteString(b"alice:$6$salt$hash".to_vec()),
            )]
            .into(),
        );
        fake.apply(&secret);
    }
    let mut private = ingress("private", "private.example.com", None);
    private.metadata.annotations = Some(
        [
            ("hawser.dev/auth-type".to_string(), "basic".to_string()),
            ("hawser.dev/auth-secret".to_string(), "users".to_string()),
        ]
        .into(),
    );
    fake.apply(&private);
    let mut source = Source::start(client, KubeSourceOptions::default());
    let (_, store) = source
        .delivery_where(|s| {
            s.secret(&ObjectKey::new("app", "users"))
                .is_some_and(|secret| secret.auth.is_some())
        })
        .await;
    assert!(
        store
            .secret(&ObjectKey::new("app", "unnamed"))
            .is_none_or(|secret| secret.auth.is_none())
    );
    source.stop().await;
}

#[tokio::test]
async fn a_malformed_object_is_reported_and_the_others_render() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("good", "good.example.com", None));
    fake.apply_value::<networking::Ingress>(json!({
        "metadata": {"name": "bad", "namespace": "app"},
        "spec": {"rules": "not a list"},
    }));
    fake.apply_value::<networking::Ingress>(json!({
        "metadata": {"name": "no-path-type", "namespace": "app"},
        "spec": {"rules": [{"http": {"paths": [{
            "path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}},
        }]}}]},
    }));
    let mut source = Source::start(client, KubeSourceOptions::default());
    let (_, store) = source.next_delivery().await;
    assert_eq!(hosts(&store), ["good=good.example.com"]);
    let status = source.status.borrow().clone();
    assert_eq!(
        status.source_problems.len(),
        2,
        "{:#?}",
        status.source_problems
    );
    assert!(status.source_problems[0].starts_with("Ingress app/bad: cannot read it"));
    assert!(status.source_problems[1].starts_with("Ingress app/no-path-type: "));
    assert_eq!(status.cluster.unwrap().malformed, 2);

    // Fixed, it renders; the problem goes.
    fake.apply(&ingress("bad", "bad.example.com", None));
    source
        .delivery_where(|s| hosts(s).contains(&"bad=bad.example.com".to_string()))
        .await;
    assert_eq!(source.status.borrow().source_problems.len(), 1);
    source.stop().await;
}

#[tokio::test]
async fn namespaces_and_label_selectors_limit_what_is_watched() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    let labelled = |name: &str, namespace: &str| {
        let mut i = ingress(name, &format!("{name}.example.com"), None);
        i.metadata.namespace = Some(namespace.into());
        i.metadata.labels = Some([("hawser.dev/expose".to_string(), "true".to_string())].into());
        i
    };
    fake.apply(&labelled("shown", "app"));
    fake.apply(&labelled("elsewhere", "other"));
    fake.apply(&ingress("unlabelled", "unlabelled.example.com", None));
    let options = KubeSourceOptions {
        namespaces: vec!["app".into()],
        label_selectors: [(Kind::Ingress, "hawser.dev/expose=true".to_string())].into(),
        ..KubeSourceOptions::default()
    };
    let mut source = Source::start(client, options);
    let (_, store) = source.next_delivery().await;
    assert_eq!(hosts(&store), ["shown=shown.example.com"]);
    let watches = source.status.borrow().cluster.clone().unwrap().watches;
    assert_eq!(
        watches.keys().collect::<Vec<_>>(),
        [
            "EndpointSlice app",
            "GRPCRoute app",
            "Gateway app",
            "GatewayClass",
            "HTTPRoute app",
            "Ingress app",
            "IngressClass",
            "Namespace",
            "ReferenceGrant app",
            "Secret app",
            "Service app",
            "TCPRoute app",
            "TLSRoute app"
        ]
    );
    assert!(
        fake.requests()
            .iter()
            .filter(|(_, p)| p.contains("ingresses"))
            .all(
                |(_, p)| p.starts_with("/apis/networking.k8s.io/v1/namespaces/app/ingresses")
                    && p.contains("labelSelector=hawser.dev%2Fexpose%3Dtrue")
            )
    );
    source.stop().await;
}

#[tokio::test]
async fn nothing_renders_before_every_watch_has_listed() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    let mut source = Source::start(client, KubeSourceOptions::default());
    // Every watch lists, but nothing renders twice: one delivery.
    let (generation, store) = source.next_delivery().await;
    assert_eq!((generation, store.len()), (Generation::new(1), 4));
    assert_eq!(source.status.borrow().renders, 1);
    source.stop().await;
}

fn publish_service(ip: &str) -> core::Service {
    object(json!({
        "metadata": {"name": "hawser-haproxy", "namespace": "hawser"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": [{"ip": ip}]}},
    }))
}

fn status_writes(fake: &FakeApi) -> usize {
    fake.requests()
        .iter()
        .filter(|(method, path)| {
            *method == Method::PATCH && path.contains("/ingresses/") && path.contains("/status")
        })
        .count()
}

async fn ingress_ip_becomes(fake: &FakeApi, ip: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let current = fake
            .get::<networking::Ingress>("app", "a")
            .and_then(|i| i.status)
            .and_then(|s| s.load_balancer)
            .and_then(|lb| lb.ingress)
            .and_then(|i| i.first().and_then(|x| x.ip.clone()));
        if current.as_deref() == Some(ip) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Ingress status never showed {ip} (it shows {current:?})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A stop signal for the tasks under test: `stopped()` resolves once `true` is sent.
fn stop_signal() -> (
    watch::Sender<bool>,
    impl Fn() -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let (tx, rx) = watch::channel(false);
    let stopped = move || {
        let mut rx = rx.clone();
        Box::pin(async move {
            let _ = rx.wait_for(|s| *s).await;
        }) as std::pin::Pin<Box<dyn Future<Output = ()> + Send>>
    };
    (tx, stopped)
}

/// Follows the publish Service `hawser/hawser-haproxy` as the controller does.
fn follow_addresses(
    client: &::kube::Client,
    stopped: impl Future<Output = ()> + Send + 'static,
) -> watch::Receiver<crate::addresses::PublishedAddresses> {
    let service = ObjectKey::new("hawser", "hawser-haproxy");
    let (tx, rx) = watch::channel(crate::addresses::PublishedAddresses::unread(
        service.clone(),
    ));
    tokio::spawn(follow_publish_service(client.clone(), service, tx, stopped));
    rx
}

#[tokio::test]
async fn ingress_status_is_written_once_per_real_change_by_the_leader_only() {
    let (fake, client) = FakeApi::start();
    fake.apply(&ingress("a", "a.example.com", None));
    fake.apply(&publish_service("203.0.113.7"));
    let served: std::collections::BTreeSet<ObjectKey> = [ObjectKey::new("app", "a")].into();
    let snapshot = |generation| {
        Some(Arc::new(crate::fleet::Snapshot {
            generation,
            store: Arc::new(Store::new()),
            config: Arc::default(),
            rendered: None,
            served: Arc::new(served.clone().into()),
            rejected: Arc::default(),
        }))
    };
    let (snapshots_tx, snapshots) = watch::channel(snapshot(1));
    let (leading_tx, leading) = watch::channel(Some(3));
    let (stop, stopped) = stop_signal();
    let addresses = follow_addresses(&client, stopped());
    let task = tokio::spawn(publish_status(
        client,
        addresses,
        snapshots,
        leading,
        stopped(),
    ));
    ingress_ip_becomes(&fake, "203.0.113.7").await;
    assert_eq!(status_writes(&fake), 1);

    // New renders with the same addresses write nothing.
    snapshots_tx.send_replace(snapshot(2));
    snapshots_tx.send_replace(snapshot(3));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status_writes(&fake), 1, "{:?}", fake.requests());

    // The Service changes: followed at once, with no new render.
    fake.apply(&publish_service("203.0.113.9"));
    ingress_ip_becomes(&fake, "203.0.113.9").await;
    assert_eq!(status_writes(&fake), 2);

    // Not leading: a new address is left for the leader.
    leading_tx.send_replace(None);
    fake.apply(&publish_service("203.0.113.8"));
    snapshots_tx.send_replace(snapshot(4));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status_writes(&fake), 2);

    // Leading again: the new address, once.
    leading_tx.send_replace(Some(4));
    ingress_ip_becomes(&fake, "203.0.113.8").await;
    snapshots_tx.send_replace(snapshot(5));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status_writes(&fake), 3);
    let _ = stop.send(true);
    task.await.unwrap();
}

#[tokio::test]
async fn a_status_write_renders_nothing() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    let mut source = Source::start(client.clone(), KubeSourceOptions::default());
    source.next_delivery().await;
    let renders = source.status.borrow().renders;

    let ingresses: ::kube::Api<networking::Ingress> = ::kube::Api::namespaced(client, "app");
    let patch = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}});
    ingresses
        .patch_status(
            "a",
            &::kube::api::PatchParams::default(),
            &::kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    // Longer than the debounce: a render would have happened by now.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        source.status.borrow().renders,
        renders,
        "the status write caused a render"
    );
    // A real change still renders.
    fake.apply(&ingress("a", "b.example.com", None));
    let (_, store) = source.next_delivery().await;
    assert_eq!(hosts(&store), ["a=b.example.com"]);
    source.stop().await;
}

fn event_posts(fake: &FakeApi) -> usize {
    fake.requests()
        .iter()
        .filter(|(method, path)| *method == Method::POST && path.contains("/events"))
        .count()
}

#[tokio::test]
async fn a_rejection_becomes_one_event_from_the_leader() {
    let (fake, client) = FakeApi::start();
    let rejected = hawser_model::ObjectRef::new(Kind::Ingress, ObjectKey::new("app", "bad"));
    let snapshot = |generation, rejected: Vec<(hawser_model::ObjectRef, String)>| {
        Some(Arc::new(crate::fleet::Snapshot {
            generation,
            store: Arc::new(Store::new()),
            config: Arc::default(),
            rendered: None,
            served: Arc::default(),
            rejected: Arc::new(rejected),
        }))
    };
    let why = "path \"/a|b\" has a character hawser does not route".to_string();
    let (snapshots_tx, snapshots) =
        watch::channel(snapshot(1, vec![(rejected.clone(), why.clone())]));
    let (leading_tx, leading) = watch::channel(None);
    let (stop, stopped) = oneshot::channel::<()>();
    let reader = client.clone();
    let task = tokio::spawn(report_rejections(
        client,
        "controller-a".into(),
        snapshots,
        leading,
        async move {
            let _ = stopped.await;
        },
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(event_posts(&fake), 0, "a standby reported");

    leading_tx.send_replace(Some(1));
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while event_posts(&fake) == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no event");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let events: ::kube::Api<k8s_openapi::api::events::v1::Event> =
        ::kube::Api::namespaced(reader, "app");
    let listed = events.list(&Default::default()).await.unwrap();
    let event = &listed.items[0];
    assert_eq!(event.reason.as_deref(), Some("Rejected"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(
        event
            .note
            .as_deref()
            .unwrap_or("")
            .contains("does not route"),
        "{event:?}"
    );
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("bad")
    );
    // The same rejection in later renders: no new event.
    snapshots_tx.send_replace(snapshot(2, vec![(rejected.clone(), why.clone())]));
    snapshots_tx.send_replace(snapshot(3, vec![(rejected.clone(), why)]));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(event_posts(&fake), 1, "{:?}", fake.requests());
    let _ = stop.send(());
    task.await.unwrap();
}

#[tokio::test]
async fn a_served_certificates_warning_becomes_an_event_on_the_secret_and_its_ingress() {
    let (fake, client) = FakeApi::start();
    let mut rendered = Renderer::new(RenderConfig::default())
        .unwrap()
        .render(&Store::new())
        .unwrap();
    let ingress = hawser_model::ObjectRef::new(Kind::Ingress, ObjectKey::new("app", "web"));
    let warning = hawser_render::CertificateWarning {
        reason: "CertificateExpired",
        message: "TLS Secret app/web-tls: its certificate expired at 2030-01-31T00:00:00Z; served anyway for a.example.com".to_string(),
    };
    let certificate = hawser_render::ServedCertificate {
        namespace: "app".to_string(),
        name: "web-tls".to_string(),
        not_after: 1_896_048_000,
        hosts: vec!["a.example.com".to_string()],
        own_names: false,
        warnings: vec![warning.clone()],
        referrers: vec![ingress],
    };
    rendered.served_certificates =
        Arc::new(BTreeMap::from([("app/web-tls".to_string(), certificate)]));
    let snapshot = Some(Arc::new(crate::fleet::Snapshot {
        generation: 1,
        store: Arc::new(Store::new()),
        config: Arc::default(),
        rendered: Some(Arc::new(rendered)),
        served: Arc::default(),
        rejected: Arc::default(),
    }));
    let (snapshots_tx, snapshots) = watch::channel(snapshot.clone());
    let (_leading_tx, leading) = watch::channel(Some(1));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(report_rejections(
        client.clone(),
        "controller-a".into(),
        snapshots,
        leading,
        async move {
            let _ = stopped.await;
        },
    ));
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while event_posts(&fake) < 2 {
        assert!(tokio::time::Instant::now() < deadline, "no events");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let events: ::kube::Api<k8s_openapi::api::events::v1::Event> =
        ::kube::Api::namespaced(client, "app");
    let listed = events.list(&Default::default()).await.unwrap();
    let mut regarding: Vec<(String, String)> = listed
        .items
        .iter()
        .map(|event| {
            assert_eq!(event.reason.as_deref(), Some("CertificateExpired"));
            assert_eq!(event.type_.as_deref(), Some("Warning"));
            assert_eq!(event.note.as_deref(), Some(warning.message.as_str()));
            let object = event.regarding.clone().unwrap_or_default();
            (
                object.kind.unwrap_or_default(),
                object.name.unwrap_or_default(),
            )
        })
        .collect();
    regarding.sort();
    assert_eq!(
        regarding,
        [
            ("Ingress".to_string(), "web".to_string()),
            ("Secret".to_string(), "web-tls".to_string())
        ]
    );
    // The same warning in a later render: no new event.
    snapshots_tx.send_replace(snapshot);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(event_posts(&fake), 2, "{:?}", fake.requests());
    let _ = stop.send(());
    task.await.unwrap();
}

#[tokio::test]
async fn the_hawser_config_says_whether_it_is_valid_once_per_change() {
    let (fake, client) = FakeApi::start();
    let config: hawser_crd::HawserConfig = object(json!({
        "apiVersion": "hawser.dev/v1alpha1", "kind": "HawserConfig",
        "metadata": {"name": "hawser", "namespace": "hawser"},
        "spec": {"settings": {"httpPort": 80, "httpsPort": 80}},
    }));
    fake.apply(&config);
    let verdict = config
        .spec
        .render_config()
        .map(|_| ())
        .map_err(Refusal::invalid_spec);
    report_config(client.clone(), "hawser", "hawser", &verdict)
        .await
        .unwrap();
    report_config(client.clone(), "hawser", "hawser", &verdict)
        .await
        .unwrap();
    let stored = fake
        .get::<hawser_crd::HawserConfig>("hawser", "hawser")
        .unwrap();
    let valid = &stored.status.unwrap().conditions[0];
    assert_eq!(
        (
            valid.type_.as_str(),
            valid.status.as_str(),
            valid.reason.as_str()
        ),
        ("Valid", "False", "InvalidSpec")
    );
    assert!(valid.message.contains("httpPort"), "{valid:?}");
    let writes = |fake: &FakeApi| {
        fake.requests()
            .iter()
            .filter(|(m, p)| *m == Method::PATCH && p.contains("hawserconfigs"))
            .count()
    };
    assert_eq!(writes(&fake), 1, "the same verdict is written once");

    report_config(client, "hawser", "hawser", &Ok(()))
        .await
        .unwrap();
    let stored = fake
        .get::<hawser_crd::HawserConfig>("hawser", "hawser")
        .unwrap();
    assert_eq!(stored.status.unwrap().conditions[0].status, "True");
    assert_eq!(writes(&fake), 2);
}

#[tokio::test]
async fn replicas_share_one_default_certificate() {
    let (fake, client) = FakeApi::start();
    let (first, second) = tokio::join!(
        shared_default_certificate(client.clone(), "hawser", "hawser-default-certificate"),
        shared_default_certificate(client.clone(), "hawser", "hawser-default-certificate"),
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(
        first.as_bytes(),
        second.as_bytes(),
        "two replicas, two certificates"
    );
    let again = shared_default_certificate(client, "hawser", "hawser-default-certificate")
        .await
        .unwrap();
    assert_eq!(first.as_bytes(), again.as_bytes());
    let secret = fake
        .get::<core::Secret>("hawser", "hawser-default-certificate")
        .unwrap();
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.unwrap();
    assert!(String::from_utf8_lossy(&data["tls.key"].0).contains("PRIVATE KEY"));
    assert!(!String::from_utf8_lossy(&data["tls.crt"].0).contains("PRIVATE KEY"));
}

#[tokio::test]
async fn a_new_configuration_renders_at_once_under_it() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    let mut source = Source::start(client, KubeSourceOptions::default());
    let (generation, _) = source.next_delivery().await;
    assert_eq!(
        (generation, source.config.settings.http_port),
        (Generation::new(1), 80)
    );

    let mut config = RenderConfig::default();
    config.settings.http_port = 8080;
    source.configure.send_replace(SourceConfig {
        renderer: Some(Arc::new(Renderer::new(config).unwrap())),
        options: KubeSourceOptions::default(),
    });
    let (generation, store) = source.next_delivery().await;
    assert_eq!(
        (generation, source.config.settings.http_port),
        (Generation::new(2), 8080)
    );
    assert_eq!(hosts(&store), ["a=a.example.com"]);
    // Listing again was not needed: one list per watch.
    let lists = source.status.borrow().cluster.as_ref().unwrap().watches["Ingress"].lists;
    assert_eq!(lists, 1);
    source.stop().await;
}

#[tokio::test]
async fn other_watched_namespaces_list_again_and_drop_what_they_no_longer_cover() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    let mut elsewhere = ingress("b", "b.example.com", None);
    elsewhere.metadata.namespace = Some("other".into());
    fake.apply(&elsewhere);
    let mut source = Source::start(client, KubeSourceOptions::default());
    let (_, store) = source.next_delivery().await;
    assert_eq!(hosts(&store), ["a=a.example.com", "b=b.example.com"]);

    let renderer = source.configure.borrow().renderer.clone();
    source.configure.send_replace(SourceConfig {
        renderer,
        options: KubeSourceOptions {
            namespaces: vec!["other".into()],
            ..KubeSourceOptions::default()
        },
    });
    let (generation, store) = source.next_delivery().await;
    assert_eq!(generation, Generation::new(2));
    assert_eq!(hosts(&store), ["b=b.example.com"]);
    let watches = source.status.borrow().cluster.clone().unwrap().watches;
    assert!(watches.contains_key("Ingress other"), "{watches:?}");
    assert!(!watches.contains_key("Ingress"), "{watches:?}");
    source.stop().await;
}

#[tokio::test]
async fn hawser_config_changes_are_applied_and_a_refused_one_keeps_the_last() {
    let (fake, client) = FakeApi::start();
    let config = |settings: Value| -> hawser_crd::HawserConfig {
        object(json!({
            "apiVersion": "hawser.dev/v1alpha1", "kind": "HawserConfig",
            "metadata": {"name": "hawser", "namespace": "hawser"},
            "spec": {"settings": settings},
        }))
    };
    let first = config(json!({"httpPort": 8080}));
    fake.apply(&first);
    let (applied_tx, mut applied) = mpsc::unbounded_channel();
    let task = tokio::spawn(follow_config(
        client,
        "hawser".into(),
        "hawser".into(),
        first.spec.clone(),
        move |spec: hawser_crd::HawserConfigSpec| -> Applied {
            let verdict = spec
                .render_config()
                .map(|c| c.settings.http_port)
                .map_err(Refusal::invalid_spec);
            let _ = applied_tx.send(verdict.clone());
            Box::pin(std::future::ready(verdict.map(|_| ())))
        },
        std::future::pending(),
    ));
    let next_applied = async |applied: &mut mpsc::UnboundedReceiver<Result<u16, Refusal>>| {
        tokio::time::timeout(PATIENCE, applied.recv())
            .await
            .expect("the change was not applied in time")
            .unwrap()
    };
    let valid = |fake: &FakeApi| {
        let stored = fake
            .get::<hawser_crd::HawserConfig>("hawser", "hawser")
            .unwrap();
        let condition = stored.status.unwrap_or_default().conditions.pop();
        condition.map(|c| (c.status, c.reason))
    };

    fake.apply(&config(json!({"httpPort": 8081})));
    assert_eq!(next_applied(&mut applied).await, Ok(8081));
    fake.apply(&config(json!({"httpPort": 443})));
    let refused = next_applied(&mut applied).await.unwrap_err();
    assert!(refused.message.contains("httpPort"), "{refused:?}");
    tokio::time::timeout(PATIENCE, async {
        while valid(&fake) != Some(("False".into(), "InvalidSpec".into())) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("Valid=False was not written");
    // The status write's echo is not applied again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(applied.try_recv().is_err());

    fake.apply(&config(json!({"httpPort": 8082})));
    assert_eq!(next_applied(&mut applied).await, Ok(8082));
    fake.delete::<hawser_crd::HawserConfig>("hawser", "hawser");
    assert_eq!(
        next_applied(&mut applied).await,
        Ok(80),
        "deleted: the defaults"
    );
    task.abort();
}

#[tokio::test]
async fn extra_resources_reach_the_store_and_an_unknown_kind_stops_nothing() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    let widgets = ::kube::api::ApiResource::from_gvk(&::kube::api::GroupVersionKind::gvk(
        "example.com",
        "v1",
        "Widget",
    ));
    let widget = |name: &str, size: u32| {
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {
                "name": name, "namespace": "app",
                "managedFields": [{"manager": "kubectl"}],
            },
            "spec": {"size": size},
        })
    };
    fake.apply_dynamic(&widgets, widget("w1", 1));
    let extra = |kind: &str| hawser_crd::ExtraResource {
        api_version: "example.com/v1".into(),
        kind: kind.into(),
        ..hawser_crd::ExtraResource::default()
    };
    let options = KubeSourceOptions {
        extra_resources: vec![extra("Widget"), extra("Gadget")],
        ..KubeSourceOptions::default()
    };
    let mut source = Source::start(client, options);
    let sizes = |store: &Store| -> Vec<(String, Vec<u64>)> {
        store
            .extra
            .by_kind()
            .map(|(kind, objects)| {
                let sizes = objects
                    .map(|o| {
                        assert!(o.pointer("/metadata/managedFields").is_none(), "{o}");
                        o["spec"]["size"].as_u64().unwrap()
                    })
                    .collect();
                (kind.to_string(), sizes)
            })
            .collect()
    };
    // Gadget is served by nobody: reported, and the rest renders.
    let (_, store) = source.next_delivery().await;
    assert_eq!(
        sizes(&store),
        [
            ("Gadget".to_string(), vec![]),
            ("Widget".to_string(), vec![1])
        ]
    );
    assert_eq!(hosts(&store), ["a=a.example.com"]);
    let watches = source.status.borrow().cluster.clone().unwrap().watches;
    let gadget = &watches["extra Gadget"];
    assert!(
        gadget
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("does not serve example.com/v1 Gadget")),
        "{gadget:?}"
    );
    assert!(watches["extra Widget"].synced);

    // A template that reads them renders again when they change.
    let mut config = RenderConfig::default();
    config.templates.snippets.insert(
        "global-widgets".into(),
        "{% for w in resources.Widget %}  # widget {{ w.metadata.name }}\n{% endfor %}".into(),
    );
    let options = source.configure.borrow().options.clone();
    source.configure.send_replace(SourceConfig {
        renderer: Some(Arc::new(Renderer::new(config).unwrap())),
        options,
    });
    source.next_delivery().await;
    fake.apply_dynamic(&widgets, widget("w2", 2));
    let (_, store) = source
        .delivery_where(|s| sizes(s).iter().any(|(k, v)| k == "Widget" && v.len() == 2))
        .await;
    assert_eq!(sizes(&store)[1], ("Widget".to_string(), vec![1, 2]));
    source.stop().await;
}

#[tokio::test]
async fn without_a_valid_configuration_nothing_renders_until_one_arrives() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    fake.apply(&ingress("a", "a.example.com", None));
    let mut source = Source::start_with(
        client,
        SourceConfig {
            renderer: None,
            options: KubeSourceOptions::default(),
        },
    );
    fake.apply(&ingress("b", "b.example.com", None));
    tokio::time::sleep(crate::coalesce::LIMIT + Duration::from_millis(300)).await;
    assert!(
        source.deliveries.try_recv().is_err(),
        "rendered without a configuration"
    );

    source.configure.send_modify(|c| {
        c.renderer = Some(Arc::new(Renderer::new(RenderConfig::default()).unwrap()));
    });
    let (_, store) = source.next_delivery().await;
    assert_eq!(hosts(&store), ["a=a.example.com", "b=b.example.com"]);
    source.stop().await;
}

mod gateway_api;
mod gateway_programmed;

#[tokio::test]
async fn only_the_config_map_a_setting_names_is_watched() {
    let (fake, client) = FakeApi::start();
    apply_backend(&fake);
    for name in ["tcp-services", "unrelated"] {
        let config_map: core::ConfigMap = object(json!({
            "metadata": {"name": name, "namespace": "edge"},
            "data": {"9000": "app/web:80"},
        }));
        fake.apply(&config_map);
    }
    let options = KubeSourceOptions {
        config_maps: [ObjectKey::new("edge", "tcp-services")].into(),
        ..KubeSourceOptions::default()
    };
    let mut source = Source::start(client, options);
    let (_, store) = source
        .delivery_where(|s| {
            s.config_map(&ObjectKey::new("edge", "tcp-services"))
                .is_some()
        })
        .await;
    let named = store
        .config_map(&ObjectKey::new("edge", "tcp-services"))
        .unwrap();
    assert_eq!(named.data["9000"], "app/web:80");
    assert!(
        store
            .config_map(&ObjectKey::new("edge", "unrelated"))
            .is_none()
    );
    source.stop().await;
}
