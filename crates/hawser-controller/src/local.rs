//! Local mode: a manifests directory, watched. Every change is re-read and
//! handed to the shared [`RenderCycle`] (see [`crate::cycle`]), which the
//! cluster watchers ([`crate::cluster`]) feed the same way.
//!
//! ```text
//!  notify events ──coalesce──► ManifestReader ──► RenderCycle ──► sink.deliver(generation)
//!   (a file being written       (re-parses the       │           (the in-process agent, or the fleet)
//!    holds the read)             changed files)  problems ──► ControllerStatus
//! ```
//!
//! A lone change is read at once (see [`crate::coalesce`]). A file is held
//! from its first write until it is closed, so a read never sees half of a
//! file being written in place (which would drop the objects after the cut
//! for one generation); a file renamed into place is complete at once. A
//! manifest file created, removed or renamed away waits a moment of quiet
//! first: an editor that renames a file away to write it anew would
//! otherwise have its objects dropped for a generation.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hawser_k8s::{ManifestReader, Placement};
use hawser_plan::Generation;
use hawser_render::Renderer;
use notify::event::{
    AccessKind, AccessMode, CreateKind, EventKind, ModifyKind, RemoveKind, RenameMode,
};
use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::warn;

use crate::coalesce::{Change, Coalescer, QUEUED_AT_ONCE, sleep_until};
use crate::cycle::{ControllerStatus, Deliver, RenderCycle, SourceRead, renderer_changed};
use crate::quarantine::Judge;

#[cfg(test)]
mod tests;

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch {}: {source}", dir.display())]
    Watch {
        dir: PathBuf,
        #[source]
        source: notify::Error,
    },
}

/// Renders the directory now and after every change, until `stop` resolves.
/// Generations start after `first_generation - 1`; `judge`, when given,
/// checks each render before it is delivered (see [`crate::quarantine`]).
pub async fn run_local(
    dir: PathBuf,
    renderer: Renderer,
    sink: impl Deliver,
    first_generation: Generation,
    judge: Option<Judge>,
    status: watch::Sender<ControllerStatus>,
    stop: impl Future<Output = ()>,
) -> Result<(), WatchError> {
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Some(event) = event.ok().and_then(FileEvent::of) {
            let _ = events_tx.send(event);
        }
    })
    .map_err(|source| WatchError::Watch {
        dir: dir.clone(),
        source,
    })?;
    watcher
        .watch(&dir, RecursiveMode::Recursive)
        .map_err(|source| WatchError::Watch {
            dir: dir.clone(),
            source,
        })?;

    let mut cycle = RenderCycle::new(first_generation).judged_by(judge);
    let mut reader = ManifestReader::default();
    let mut coalescer = Coalescer::default();
    // Files written to and not closed yet.
    let mut writing = BTreeSet::new();
    // What the events since the last read touched.
    let mut changed = Changed::Everything;
    let mut renderer_changes = sink.renderer_changes();
    coalescer.rendering(Instant::now());
    read_and_render(
        &mut reader,
        &mut changed,
        &mut cycle,
        &dir,
        &renderer,
        &sink,
        &status,
    )
    .await;
    tokio::pin!(stop);
    loop {
        let deadline = coalescer.deadline(!writing.is_empty());
        tokio::select! {
            () = &mut stop => return Ok(()),
            // The directory as it was read, rendered again.
            () = renderer_changed(&mut renderer_changes) => {
                coalescer.changed(Instant::now(), Change::Complete);
            }
            event = events.recv() => {
                let Some(event) = event else { return Ok(()) };
                // The events of one operation (a file written and renamed
                // into place) arrive together: all are taken before the
                // deadline is looked at again.
                let queued = std::iter::from_fn(|| events.try_recv().ok()).take(QUEUED_AT_ONCE);
                for event in std::iter::once(event).chain(queued) {
                    if !changed.add(&dir, &event) {
                        continue;
                    }
                    event.track(&mut writing);
                    coalescer.changed(Instant::now(), event.change);
                }
            }
            () = sleep_until(deadline) => {
                coalescer.rendering(Instant::now());
                // Past the limit, a file still open is read as it is.
                writing.clear();
                read_and_render(&mut reader, &mut changed, &mut cycle, &dir, &renderer, &sink, &status).await;
            }
        }
    }
}

/// What the events since the last read say may have changed.
#[derive(Debug)]
enum Changed {
    /// These manifest files alone.
    Files(BTreeSet<PathBuf>),
    /// Anything: a directory, a link, an entry gone whose kind is not
    /// known, or events the system dropped.
    Everything,
}

impl Changed {
    /// Adds what `event` touched; false when it touched nothing a read
    /// finds (a hidden file, such as one written to be renamed into place,
    /// or a file that is no manifest): such an event is no change.
    fn add(&mut self, dir: &Path, event: &FileEvent) -> bool {
        if event.rescan || event.paths.is_empty() {
            *self = Changed::Everything;
            return true;
        }
        let mut any = false;
        for path in &event.paths {
            match touched(dir, path, event.folder) {
                Touched::Manifest => {
                    any = true;
                    if let Changed::Files(files) = self {
                        files.insert(path.clone());
                    }
                }
                Touched::Nothing => {}
                Touched::Anything => {
                    *self = Changed::Everything;
                    return true;
                }
            }
        }
        any
    }
}

/// What an event on `path` may have changed of what a read finds.
enum Touched {
    Manifest,
    /// A hidden entry, which reads skip (and with it all below it), or a
    /// file that is no manifest.
    Nothing,
    Anything,
}

fn touched(dir: &Path, path: &Path, folder: bool) -> Touched {
    match hawser_k8s::placement(dir, path) {
        Placement::Outside => return Touched::Anything,
        // The reader reads what links point to through their visible
        // paths, which are never named by an event on the target; with
        // a link in the directory, it reads the whole of it anyway.
        Placement::Hidden => return Touched::Nothing,
        Placement::Visible => {}
    }
    if hawser_k8s::is_manifest(path) && !folder {
        return Touched::Manifest;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && !folder => Touched::Nothing,
        // A directory, a link, or gone: maybe a directory renamed away.
        _ => Touched::Anything,
    }
}

/// What a watch event says about the directory. Reads (our own, too) are
/// not changes.
#[derive(Debug)]
struct FileEvent {
    files: Files,
    change: Change,
    /// Every path the event names.
    paths: Vec<PathBuf>,
    /// The event is known to be about a directory.
    folder: bool,
    /// The system dropped events: anything may have changed.
    rescan: bool,
}

#[derive(Debug, Clone, Copy)]
enum Files {
    /// Written to, and maybe not complete yet.
    Writing,
    /// Closed after writing, or removed: complete (or gone).
    Done,
    /// Created, renamed, or its metadata changed.
    Changed,
}

impl FileEvent {
    fn of(event: notify::Event) -> Option<FileEvent> {
        let change = if may_come_back(&event) {
            Change::Partial
        } else {
            Change::Complete
        };
        let folder = matches!(
            event.kind,
            EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder)
        );
        let rescan = event.need_rescan();
        let files = match event.kind {
            EventKind::Modify(ModifyKind::Data(_)) => Files::Writing,
            EventKind::Access(AccessKind::Close(AccessMode::Write)) | EventKind::Remove(_) => {
                Files::Done
            }
            EventKind::Access(_) => return None,
            _ => Files::Changed,
        };
        Some(FileEvent {
            files,
            change,
            paths: event.paths,
            folder,
            rescan,
        })
    }

    fn track(&self, writing: &mut BTreeSet<PathBuf>) {
        match self.files {
            Files::Writing => writing.extend(self.paths.iter().cloned()),
            Files::Done => {
                for path in &self.paths {
                    writing.remove(path);
                }
            }
            Files::Changed => {}
        }
    }
}

/// A manifest file created (to be written next), removed or renamed away
/// (maybe by an editor about to write it anew), or a directory removed:
/// what the directory holds at this instant may be half of an operation.
fn may_come_back(event: &notify::Event) -> bool {
    let manifest = || event.paths.iter().any(|p| hawser_k8s::is_manifest(p));
    match event.kind {
        EventKind::Remove(RemoveKind::Folder) => true,
        EventKind::Create(_)
        | EventKind::Remove(_)
        | EventKind::Modify(ModifyKind::Name(RenameMode::From)) => manifest(),
        _ => false,
    }
}

/// Reads the directory (what changed of it) and renders it; a directory
/// that cannot be read keeps the last generation.
async fn read_and_render(
    reader: &mut ManifestReader,
    changed: &mut Changed,
    cycle: &mut RenderCycle,
    dir: &Path,
    renderer: &Renderer,
    sink: &impl Deliver,
    status: &watch::Sender<ControllerStatus>,
) {
    let started = Instant::now();
    let read = match std::mem::replace(changed, Changed::Files(BTreeSet::new())) {
        Changed::Files(files) => reader.read_changed(dir, &files),
        Changed::Everything => reader.read(dir),
    };
    match read {
        Ok(manifests) => {
            let problems = manifests.problems.iter().map(ToString::to_string).collect();
            cycle
                .render(
                    SourceRead {
                        store: manifests.store,
                        problems,
                        started,
                    },
                    renderer,
                    sink,
                    status,
                )
                .await;
        }
        Err(e) => {
            warn!("{e}; keeping the last generation");
            status.send_modify(|s| s.render_error = Some(e.to_string()));
            // What changed was not read: the next read takes all of it.
            *changed = Changed::Everything;
        }
    }
}
