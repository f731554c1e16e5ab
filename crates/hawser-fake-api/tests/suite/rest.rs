//! The fake's REST semantics, through the real kube `Api`.

use hawser_fake_api::FakeApi;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodStatus};
use k8s_openapi::api::networking::v1::IngressClass;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::Status;
use kube::{Api, CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

fn config_map(namespace: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some(namespace.into());
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm.data = Some([("key".to_string(), name.to_string())].into());
    cm
}

fn api_error(error: kube::Error) -> Box<Status> {
    match error {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other}"),
    }
}

#[tokio::test]
async fn create_get_replace_conflict_delete() {
    let (fake, client) = FakeApi::start();
    let api: Api<ConfigMap> = Api::namespaced(client, "app");

    let created = api
        .create(&PostParams::default(), &config_map("app", "a", &[]))
        .await
        .unwrap();
    let rv = created.resource_version().unwrap();
    assert!(!rv.is_empty());
    assert!(created.uid().is_some());
    assert!(created.creation_timestamp().is_some());
    assert_eq!(created.metadata.generation, Some(1));

    let again = api
        .create(&PostParams::default(), &config_map("app", "a", &[]))
        .await
        .unwrap_err();
    let again = api_error(again);
    assert_eq!((again.code, again.reason.as_str()), (409, "AlreadyExists"));

    let mut changed = created.clone();
    changed.data = Some([("key".to_string(), "new".to_string())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_ne!(replaced.resource_version(), Some(rv.clone()));
    assert_eq!(replaced.metadata.generation, Some(2));
    assert_eq!(replaced.uid(), created.uid());

    // `changed` still carries the old resourceVersion.
    let stale = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    let stale = api_error(stale);
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    assert!(
        stale.message.contains("the object has been modified"),
        "{}",
        stale.message
    );

    let got = api.get("a").await.unwrap();
    assert_eq!(got.data.unwrap()["key"], "new");

    api.delete("a", &DeleteParams::default()).await.unwrap();
    let missing = api_error(api.get("a").await.unwrap_err());
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));
    assert!(fake.get::<ConfigMap>("app", "a").is_none());
}

#[tokio::test]
async fn list_with_selectors_and_namespaces() {
    let (fake, client) = FakeApi::start();
    fake.apply(&config_map(
        "app",
        "web",
        &[("app", "web"), ("tier", "front")],
    ));
    fake.apply(&config_map("app", "db", &[("app", "db")]));
    fake.apply(&config_map("other", "web", &[("app", "web")]));

    let all: Api<ConfigMap> = Api::all(client.clone());
    let list = all.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 3);
    assert_eq!(
        list.metadata.resource_version,
        Some(fake.resource_version().to_string())
    );

    let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        list.items
            .iter()
            .map(|c| format!("{}/{}", c.namespace().unwrap(), c.name_any()))
            .collect()
    };
    let web = all
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(names(web), ["app/web", "other/web"]);
    let front = all
        .list(&ListParams::default().labels("app in (web,db),tier"))
        .await
        .unwrap();
    assert_eq!(names(front), ["app/web"]);
    let not_web = all
        .list(&ListParams::default().labels("app!=web"))
        .await
        .unwrap();
    assert_eq!(names(not_web), ["app/db"]);

    let app: Api<ConfigMap> = Api::namespaced(client, "app");
    let by_name = app
        .list(&ListParams::default().fields("metadata.name=web"))
        .await
        .unwrap();
    assert_eq!(names(by_name), ["app/web"]);
}

#[tokio::test]
async fn cluster_scoped_objects() {
    let (fake, client) = FakeApi::start();
    let mut class = IngressClass::default();
    class.metadata.name = Some("hawser".into());
    // A namespace on a cluster-scoped object is dropped, as the API server does.
    class.metadata.namespace = Some("ignored".into());
    fake.apply(&class);
    let api: Api<IngressClass> = Api::all(client);
    let got = api.get("hawser").await.unwrap();
    assert_eq!(got.namespace(), None);
    assert!(fake.get::<IngressClass>("", "hawser").is_some());
    assert!(fake.delete::<IngressClass>("", "hawser"));
    assert!(api.get_opt("hawser").await.unwrap().is_none());
}

#[tokio::test]
async fn merge_patch_and_server_side_apply() {
    let (_fake, client) = FakeApi::start();
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    // Apply creates.
    let applied = api
        .patch(
            "settings",
            &PatchParams::apply("test"),
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings"},
                "data": {"a": "1", "b": "2"},
            })),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.as_ref().unwrap().len(), 2);
    // A merge patch merges; null removes.
    let merged = api
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "one", "b": null}})),
        )
        .await
        .unwrap();
    let data = merged.data.unwrap();
    assert_eq!(data.get("a").map(String::as_str), Some("one"));
    assert!(!data.contains_key("b"));
    // A patch carrying a stale resourceVersion conflicts.
    let stale = api
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": applied.resource_version()}, "data": {"a": "x"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(stale).code, 409);
}

#[tokio::test]
async fn status_subresource_and_no_op_writes() {
    let (fake, client) = FakeApi::start();
    let mut pod = Pod::default();
    pod.metadata.name = Some("p".into());
    pod.metadata.namespace = Some("app".into());
    fake.apply(&pod);
    let api: Api<Pod> = Api::namespaced(client, "app");

    let status = json!({"status": {"phase": "Running", "podIP": "10.0.0.7"}});
    let patched = api
        .patch_status("p", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(
        patched.status.as_ref().and_then(|s| s.pod_ip.as_deref()),
        Some("10.0.0.7")
    );
    // The status write is not a spec change.
    assert_eq!(patched.metadata.generation, Some(1));

    // The main resource keeps status.
    let mut replaced = patched.clone();
    replaced.status = Some(PodStatus::default());
    replaced
        .metadata
        .labels
        .get_or_insert_default()
        .insert("x".into(), "y".into());
    let replaced = api
        .replace("p", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(replaced.status.unwrap().phase.as_deref(), Some("Running"));

    // Writing the same status again changes nothing: no new resourceVersion.
    let rv = fake.resource_version();
    api.patch_status("p", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(fake.resource_version(), rv);
    let status_writes = fake
        .requests()
        .iter()
        .filter(|(m, p)| {
            m == http::Method::PATCH && p.starts_with("/api/v1/namespaces/app/pods/p/status")
        })
        .count();
    assert_eq!(status_writes, 2);
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let (fake, client) = FakeApi::start();
    let mut cm = config_map("app", "held", &[]);
    cm.metadata.finalizers = Some(vec!["hawser.dev/cleanup".into()]);
    fake.apply(&cm);
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    let deleted = api.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = deleted.left().expect("the object, marked for deletion");
    assert!(marked.metadata.deletion_timestamp.is_some());
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("held").await.unwrap().is_none());
    assert!(fake.get::<ConfigMap>("app", "held").is_none());
}

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[kube(
    group = "hawser.dev",
    version = "v1alpha1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    pub size: u32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct WidgetStatus {
    pub observed: u32,
}

#[tokio::test]
async fn custom_resources() {
    let (fake, client) = FakeApi::start();
    let api: Api<Widget> = Api::namespaced(client, "app");
    let widget = Widget::new("w", WidgetSpec { size: 1 });
    let created = api.create(&PostParams::default(), &widget).await.unwrap();
    assert_eq!(created.spec.size, 1);
    api.patch_status(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"observed": 1}})),
    )
    .await
    .unwrap();
    let stored = fake.get::<Widget>("app", "w").unwrap();
    assert_eq!(stored.status, Some(WidgetStatus { observed: 1 }));
    let (method, path) = fake.requests().pop().unwrap();
    assert_eq!(method, http::Method::PATCH);
    assert!(
        path.starts_with("/apis/hawser.dev/v1alpha1/namespaces/app/widgets/w/status"),
        "{path}"
    );
}
