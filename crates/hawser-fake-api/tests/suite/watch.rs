//! Watch streams, through the real kube-runtime watcher and reflector.

use std::collections::BTreeSet;
use std::time::Duration;

use hawser_fake_api::FakeApi;
use http::Method;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher::{self, Event, watcher};
use kube::runtime::{WatchStreamExt, reflector};
use kube::{Api, ResourceExt};
use tokio_stream::{Stream, StreamExt as _};

fn config_map(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("app".into());
    cm.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    cm.data = Some([("key".to_string(), value.to_string())].into());
    cm
}

/// The next item, waiting at most 10 s.
async fn next<S: Stream + Unpin>(stream: &mut S) -> S::Item {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the watcher said nothing for 10 s")
        .expect("the watcher stream ended")
}

/// Reads events up to the end of the next (re)list; returns the objects listed.
async fn until_listed<S>(stream: &mut S) -> BTreeSet<String>
where
    S: Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin,
{
    let mut listed = BTreeSet::new();
    loop {
        match next(stream).await {
            Ok(Event::Init) => listed.clear(),
            Ok(Event::InitApply(cm)) => {
                listed.insert(describe(&cm));
            }
            Ok(Event::InitDone) => return listed,
            Ok(other) => panic!("unexpected event before the list ended: {other:?}"),
            Err(_) => {}
        }
    }
}

fn describe(cm: &ConfigMap) -> String {
    let value = cm
        .data
        .as_ref()
        .and_then(|d| d.get("key"))
        .cloned()
        .unwrap_or_default();
    format!("{}={value}", cm.name_any())
}

async fn next_change<S>(stream: &mut S) -> String
where
    S: Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin,
{
    loop {
        match next(stream).await {
            Ok(Event::Apply(cm)) => return format!("apply {}", describe(&cm)),
            Ok(Event::Delete(cm)) => return format!("delete {}", cm.name_any()),
            Ok(other) => panic!("unexpected event: {other:?}"),
            Err(_) => {}
        }
    }
}

#[tokio::test]
async fn list_then_watch_added_modified_deleted() {
    let (fake, client) = FakeApi::start();
    fake.apply(&config_map("a", "1"));
    fake.apply(&config_map("b", "1"));
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    let mut stream = Box::pin(watcher(api, watcher::Config::default()));

    assert_eq!(
        until_listed(&mut stream).await,
        ["a=1", "b=1"].map(String::from).into()
    );
    fake.apply(&config_map("c", "1"));
    assert_eq!(next_change(&mut stream).await, "apply c=1");
    fake.apply(&config_map("a", "2"));
    assert_eq!(next_change(&mut stream).await, "apply a=2");
    fake.delete::<ConfigMap>("app", "b");
    assert_eq!(next_change(&mut stream).await, "delete b");
    assert_eq!(fake.open_watches(), 1);
}

#[tokio::test]
async fn gone_after_compaction_relists_with_the_changes_made_meanwhile() {
    let (fake, client) = FakeApi::start();
    fake.apply(&config_map("a", "1"));
    fake.apply(&config_map("b", "1"));
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    let mut stream = Box::pin(watcher(api, watcher::Config::default()));
    until_listed(&mut stream).await;
    fake.apply(&config_map("c", "1"));
    assert_eq!(next_change(&mut stream).await, "apply c=1");

    // The connection drops; while it is down, objects change and the
    // API server compacts its history.
    fake.break_watches();
    fake.apply(&config_map("a", "2"));
    fake.delete::<ConfigMap>("app", "b");
    fake.apply(&config_map("d", "1"));
    fake.compact();

    // Re-watching from the old resourceVersion gets 410; the watcher relists.
    let mut saw_gone = false;
    let listed = loop {
        match next(&mut stream).await {
            Err(watcher::Error::WatchError(status)) => {
                assert_eq!(status.code, 410);
                saw_gone = true;
            }
            Err(_) => {}
            Ok(Event::Init) => break until_listed_after_init(&mut stream).await,
            Ok(other) => panic!("unexpected event: {other:?}"),
        }
    };
    assert!(saw_gone);
    assert_eq!(listed, ["a=2", "c=1", "d=1"].map(String::from).into());
    let lists = fake
        .requests()
        .iter()
        .filter(|(m, p)| *m == Method::GET && !p.contains("watch=true"))
        .count();
    assert_eq!(lists, 2, "{:#?}", fake.requests());

    fake.apply(&config_map("e", "1"));
    assert_eq!(next_change(&mut stream).await, "apply e=1");
}

async fn until_listed_after_init<S>(stream: &mut S) -> BTreeSet<String>
where
    S: Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin,
{
    let mut listed = BTreeSet::new();
    loop {
        match next(stream).await {
            Ok(Event::InitApply(cm)) => {
                listed.insert(describe(&cm));
            }
            Ok(Event::InitDone) => return listed,
            other => panic!("unexpected during the relist: {other:?}"),
        }
    }
}

#[tokio::test]
async fn failed_watch_resumes_from_its_resource_version() {
    let (fake, client) = FakeApi::start();
    fake.apply(&config_map("a", "1"));
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    let mut stream = Box::pin(watcher(api, watcher::Config::default()));
    until_listed(&mut stream).await;
    fake.apply(&config_map("b", "1"));
    assert_eq!(next_change(&mut stream).await, "apply b=1");

    fake.fail_next_watch();
    fake.break_watches();
    fake.apply(&config_map("a", "2"));
    // One error for the broken stream, one for the 500, then the change
    // made during the outage, from history: no relist.
    assert_eq!(next_change(&mut stream).await, "apply a=2");
    let requests = fake.requests();
    let watches: Vec<&String> = requests
        .iter()
        .filter(|(_, p)| p.contains("watch=true"))
        .map(|(_, p)| p)
        .collect();
    assert_eq!(watches.len(), 3, "{watches:#?}");
    let lists = requests.len() - watches.len();
    assert_eq!(lists, 1);
}

#[tokio::test]
async fn timeout_closes_the_watch_with_a_bookmark_and_the_watcher_resumes() {
    let (fake, client) = FakeApi::start();
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    let mut stream = Box::pin(watcher(api, watcher::Config::default().timeout(1)));
    until_listed(&mut stream).await;
    fake.apply(&config_map("early", "1"));
    assert_eq!(next_change(&mut stream).await, "apply early=1");
    // The watch is open now; it times out while nobody polls.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    fake.apply(&config_map("late", "1"));
    assert_eq!(next_change(&mut stream).await, "apply late=1");
    let watches = fake
        .requests()
        .iter()
        .filter(|(_, p)| p.contains("watch=true"))
        .count();
    assert!(watches >= 2, "{:#?}", fake.requests());
}

#[tokio::test]
async fn objects_leaving_a_selector_are_deleted_from_the_watch() {
    let (fake, client) = FakeApi::start();
    fake.apply(&config_map("a", "1"));
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    let mut stream = Box::pin(watcher(api, watcher::Config::default().labels("app=web")));
    until_listed(&mut stream).await;
    let mut moved = config_map("a", "2");
    moved.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
    fake.apply(&moved);
    assert_eq!(next_change(&mut stream).await, "delete a");
    fake.apply(&config_map("a", "3"));
    assert_eq!(next_change(&mut stream).await, "apply a=3");
}

#[tokio::test]
async fn streaming_lists_end_with_the_initial_events_bookmark() {
    let (fake, client) = FakeApi::start();
    fake.apply(&config_map("a", "1"));
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    let mut stream = Box::pin(watcher(api, watcher::Config::default().streaming_lists()));
    assert_eq!(
        until_listed(&mut stream).await,
        ["a=1"].map(String::from).into()
    );
    fake.apply(&config_map("b", "1"));
    assert_eq!(next_change(&mut stream).await, "apply b=1");
    assert!(
        fake.requests()
            .iter()
            .all(|(_, p)| p.contains("watch=true"))
    );
}

#[tokio::test]
async fn reflector_store_follows_the_server() {
    let (fake, client) = FakeApi::start();
    fake.apply(&config_map("a", "1"));
    let api: Api<ConfigMap> = Api::namespaced(client, "app");
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api, watcher::Config::default())).applied_objects();
    let mut stream = Box::pin(stream);
    let applied = next(&mut stream).await.unwrap();
    assert_eq!(applied.name_any(), "a"); // the initial list
    fake.apply(&config_map("b", "1"));
    let applied = next(&mut stream).await.unwrap();
    assert_eq!(applied.name_any(), "b");
    let mut names: Vec<String> = reader.state().iter().map(|c| c.name_any()).collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
}
