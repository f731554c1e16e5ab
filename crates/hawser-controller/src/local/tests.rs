//! Local mode against a real directory and real file events.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use hawser_model::Store;
use hawser_render::RenderConfig;
use tokio::sync::{mpsc, oneshot};

use super::*;
use crate::cycle::CycleRender;

/// Long enough for any event to arrive on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// Every store rendered, delivered or not (an Ingress of a class nobody
/// defines changes no configuration, but is read all the same), and when
/// the renderer the sink asks for changes.
struct Stores(mpsc::UnboundedSender<Arc<Store>>, watch::Receiver<()>);

impl Deliver for Stores {
    fn renderer_changes(&self) -> Option<watch::Receiver<()>> {
        Some(self.1.clone())
    }

    fn deliver(&self, _render: &CycleRender) {}

    fn rendered(&self, render: &CycleRender) {
        let _ = self.0.send(Arc::clone(&render.store));
    }
}

fn ingress(name: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: app\n\
         spec:\n  ingressClassName: hawser\n  defaultBackend:\n    service:\n      name: web\n      port:\n        number: 80\n"
    )
}

fn ingress_names(store: &Store) -> Vec<String> {
    store.ingresses().map(|i| i.key.name.clone()).collect()
}

struct Local {
    stores: mpsc::UnboundedReceiver<Arc<Store>>,
    /// Tells the source the sink's renderer changed.
    renderer_changed: watch::Sender<()>,
    stop: Option<oneshot::Sender<()>>,
}

impl Local {
    fn start(dir: PathBuf) -> Local {
        let (tx, stores) = mpsc::unbounded_channel();
        let (status, _) = watch::channel(ControllerStatus::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let renderer = Renderer::new(RenderConfig::default()).unwrap();
        let (renderer_changed, renderer_changes) = watch::channel(());
        tokio::spawn(run_local(
            dir,
            renderer,
            Stores(tx, renderer_changes),
            Generation::new(1),
            None,
            status,
            async move {
                let _ = stopped.await;
            },
        ));
        Local {
            stores,
            renderer_changed,
            stop: Some(stop),
        }
    }

    async fn next(&mut self) -> Arc<Store> {
        tokio::time::timeout(PATIENCE, self.stores.recv())
            .await
            .expect("no render in time")
            .expect("the source stopped")
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[tokio::test]
async fn a_file_written_in_two_parts_is_never_read_half_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("first.yaml"), ingress("first")).unwrap();
    let mut local = Local::start(dir.path().to_path_buf());
    assert_eq!(ingress_names(&*local.next().await), ["first"]);

    // Two Ingresses in one file, written in place with a pause longer than
    // any quiet the source waits for (but within LIMIT) between the halves:
    // the cut falls between documents, so a read of the first half alone
    // would parse, without `b`.
    let both = format!("{}---\n{}", ingress("a"), ingress("b"));
    let (head, tail) = both.split_at(both.find("---").unwrap());
    let mut file = std::fs::File::create(dir.path().join("two.yaml")).unwrap();
    file.write_all(head.as_bytes()).unwrap();
    file.flush().unwrap();
    tokio::time::sleep(crate::coalesce::DEBOUNCE + Duration::from_millis(300)).await;
    file.write_all(tail.as_bytes()).unwrap();
    drop(file);

    loop {
        let names = ingress_names(&*local.next().await);
        assert!(
            !names.contains(&"a".to_string()) || names.contains(&"b".to_string()),
            "read half written: {names:?}"
        );
        if names.contains(&"b".to_string()) {
            assert_eq!(names, ["a", "b", "first"]);
            break;
        }
    }
}

#[tokio::test]
async fn another_renderer_renders_the_directory_again_as_it_was_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("first.yaml"), ingress("first")).unwrap();
    let mut local = Local::start(dir.path().to_path_buf());
    assert_eq!(ingress_names(&*local.next().await), ["first"]);

    local.renderer_changed.send_replace(());
    assert_eq!(ingress_names(&*local.next().await), ["first"]);
}

#[tokio::test]
async fn a_file_renamed_into_place_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut local = Local::start(dir.path().to_path_buf());
    assert_eq!(ingress_names(&*local.next().await), Vec::<String>::new());

    let hidden = dir.path().join(".new.yaml");
    std::fs::write(&hidden, ingress("renamed")).unwrap();
    std::fs::rename(&hidden, dir.path().join("new.yaml")).unwrap();
    assert_eq!(ingress_names(&*local.next().await), ["renamed"]);
}

#[tokio::test]
async fn a_hidden_file_being_written_is_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let mut local = Local::start(dir.path().to_path_buf());
    assert_eq!(ingress_names(&*local.next().await), Vec::<String>::new());

    // Rendered on its events, it would make the rename that follows wait
    // as the rest of an operation already rendered.
    let hidden = dir.path().join(".new.yaml.tmp");
    std::fs::write(&hidden, ingress("renamed")).unwrap();
    tokio::time::sleep(crate::coalesce::BURST).await;
    assert!(
        local.stores.try_recv().is_err(),
        "rendered a hidden file's events"
    );

    std::fs::rename(&hidden, dir.path().join("new.yaml")).unwrap();
    assert_eq!(ingress_names(&*local.next().await), ["renamed"]);
}

/// How the source takes each kind of event (see [`crate::coalesce`]).
fn change_of(kind: EventKind, paths: &[&str]) -> Option<Change> {
    let mut event = notify::Event::new(kind);
    for path in paths {
        event = event.add_path(PathBuf::from(path));
    }
    FileEvent::of(event).map(|e| e.change)
}

#[test]
fn a_manifest_that_may_come_back_waits_and_a_complete_one_does_not() {
    use notify::event::{CreateKind, MetadataKind};
    let renamed = |mode| EventKind::Modify(ModifyKind::Name(mode));
    let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
    // Complete as it stands: renamed into place, closed after writing.
    assert_eq!(
        change_of(renamed(RenameMode::To), &["/m/app.yaml"]),
        Some(Change::Complete)
    );
    assert_eq!(change_of(closed, &["/m/app.yaml"]), Some(Change::Complete));
    assert_eq!(
        change_of(
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)),
            &["/m/app.yaml"]
        ),
        Some(Change::Complete)
    );
    // A temporary file renamed into place: its leaving is no loss.
    assert_eq!(
        change_of(renamed(RenameMode::From), &["/m/.app.yaml.tmp"]),
        Some(Change::Complete)
    );
    assert_eq!(
        change_of(EventKind::Create(CreateKind::File), &["/m/.app.yaml.swp"]),
        Some(Change::Complete)
    );
    // What an editor does before it writes a manifest anew.
    assert_eq!(
        change_of(renamed(RenameMode::From), &["/m/app.yaml"]),
        Some(Change::Partial)
    );
    assert_eq!(
        change_of(EventKind::Remove(RemoveKind::File), &["/m/app.YML"]),
        Some(Change::Partial)
    );
    assert_eq!(
        change_of(EventKind::Create(CreateKind::File), &["/m/app.json"]),
        Some(Change::Partial)
    );
    assert_eq!(
        change_of(EventKind::Remove(RemoveKind::Folder), &["/m/team"]),
        Some(Change::Partial)
    );
    // Reads are no change at all.
    assert_eq!(
        change_of(
            EventKind::Access(AccessKind::Open(AccessMode::Read)),
            &["/m/app.yaml"]
        ),
        None
    );
}

#[test]
fn events_name_the_files_to_read_again_or_ask_for_everything() {
    use notify::event::CreateKind;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("team")).unwrap();
    std::fs::write(root.join("README.md"), "").unwrap();
    let event = |kind: EventKind, path: PathBuf| {
        FileEvent::of(notify::Event::new(kind).add_path(path)).unwrap()
    };
    let renamed = |mode| EventKind::Modify(ModifyKind::Name(mode));
    let after = |events: &[FileEvent]| {
        let mut changed = Changed::Files(BTreeSet::new());
        for e in events {
            changed.add(root, e);
        }
        match changed {
            Changed::Files(files) => Some(files),
            Changed::Everything => None,
        }
    };

    // A file written beside its place, hidden, then renamed into it: the
    // manifest alone is read again.
    let tmp = root.join(".app.yaml.tmp");
    let app = root.join("app.yaml");
    let written = [
        event(EventKind::Create(CreateKind::File), tmp.clone()),
        event(renamed(RenameMode::From), tmp),
        event(renamed(RenameMode::To), app.clone()),
    ];
    assert_eq!(after(&written), Some([app.clone()].into()));
    let mut changed = Changed::Files(BTreeSet::new());
    let touched: Vec<bool> = written.iter().map(|e| changed.add(root, e)).collect();
    assert_eq!(
        touched,
        [false, false, true],
        "only the manifest is a change"
    );
    // A file that is no manifest, still there.
    let readme = event(
        EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any)),
        root.join("README.md"),
    );
    assert_eq!(after(&[readme]), Some(BTreeSet::new()));
    // A directory; an entry gone whose kind is not known (a directory
    // renamed away?); a directory removed; events the system dropped.
    assert_eq!(
        after(&[event(renamed(RenameMode::To), root.join("team"))]),
        None
    );
    assert_eq!(
        after(&[event(renamed(RenameMode::From), root.join("gone"))]),
        None
    );
    assert_eq!(
        after(&[event(
            EventKind::Remove(RemoveKind::Folder),
            root.join("x.yaml")
        )]),
        None
    );
    let dropped = notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
    assert_eq!(after(&[FileEvent::of(dropped).unwrap()]), None);
}
