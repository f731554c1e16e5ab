//! The long-lived loops of a command, supervised.
//!
//! ```text
//!  Tasks::spawn("lead", loop) ──► JoinSet (each in a span named after its loop)
//!  Tasks::run_until(main) ──► main's result, or an error as soon as a
//!                             critical loop ends (returns or panics)
//! ```
//!
//! A loop that ends while its command still runs leaves the process half
//! alive (a dead Lease loop keeps pushing under an old epoch, a dead status
//! loop writes nothing): the command ends with an error naming it instead, so
//! the process exits and whoever supervises it starts it again. Dropping
//! [`Tasks`] aborts what still runs.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{self, JoinSet};
use tracing::{Instrument as _, error, info_span};

/// How long a command's loops may take to end once it stops.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What a finished task was.
#[derive(Debug, Clone, Copy)]
struct Named {
    name: &'static str,
    /// Its end ends the command.
    critical: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("the {name} loop ended while hawser still runs")]
    Ended { name: &'static str },
    #[error("the {name} loop failed: {source}")]
    Panicked {
        name: &'static str,
        #[source]
        source: task::JoinError,
    },
}

/// The loops a command owns.
#[derive(Debug)]
pub struct Tasks {
    set: JoinSet<()>,
    names: HashMap<task::Id, Named>,
    /// True once the command stops: loops then end as they should.
    stopping: watch::Receiver<bool>,
}

impl Tasks {
    /// Loops that end once `stopping` is true are ending as asked.
    pub fn new(stopping: watch::Receiver<bool>) -> Self {
        Tasks {
            set: JoinSet::new(),
            names: HashMap::new(),
            stopping,
        }
    }

    /// Runs `task` until the command stops; its end before then is fatal.
    pub fn spawn(&mut self, name: &'static str, task: impl Future<Output = ()> + Send + 'static) {
        self.spawn_named(
            Named {
                name,
                critical: true,
            },
            task,
        );
    }

    /// Runs `task`, a loop that does not watch the command's stop itself (a
    /// metrics follower), until the command stops; its end before then is
    /// fatal.
    pub fn spawn_until_stop(
        &mut self,
        name: &'static str,
        task: impl Future<Output = ()> + Send + 'static,
    ) {
        let mut stopping = self.stopping.clone();
        self.spawn(name, async move {
            tokio::select! {
                () = task => {}
                _ = stopping.wait_for(|stopping| *stopping) => {}
            }
        });
    }

    /// Runs a job that may finish on its own (a one-off check at start).
    pub fn spawn_job(
        &mut self,
        name: &'static str,
        task: impl Future<Output = ()> + Send + 'static,
    ) {
        self.spawn_named(
            Named {
                name,
                critical: false,
            },
            task,
        );
    }

    fn spawn_named(&mut self, named: Named, task: impl Future<Output = ()> + Send + 'static) {
        let span = info_span!("task", name = named.name);
        let handle = self.set.spawn(task.instrument(span));
        self.names.insert(handle.id(), named);
    }

    /// Runs `main` to its end while watching the loops: the first critical
    /// one to end ends this with an error (a job's end, or its panic, is
    /// logged and nothing more).
    pub async fn run_until<T>(&mut self, main: impl Future<Output = T>) -> Result<T, TaskError> {
        tokio::pin!(main);
        loop {
            tokio::select! {
                result = &mut main => return Ok(result),
                Some(ended) = self.set.join_next_with_id() => {
                    if let Some(error) = self.ended(ended) {
                        error!("{error}");
                        return Err(error);
                    }
                }
            }
        }
    }

    /// Gives the loops up to `grace` to end (they end once the command's
    /// stop is signalled: a Lease is released, a server closes), then
    /// aborts what still runs.
    pub async fn drain(mut self, grace: Duration) {
        let ended = tokio::time::timeout(grace, async {
            while self.set.join_next().await.is_some() {}
        })
        .await;
        if ended.is_err() {
            let left: Vec<&str> = self.names.values().map(|n| n.name).collect();
            tracing::warn!(
                "still running after {grace:?}, aborted: {}",
                left.join(", ")
            );
        }
    }

    /// The error a finished task means, if it means one.
    fn ended(&mut self, ended: Result<(task::Id, ()), task::JoinError>) -> Option<TaskError> {
        let (id, failure) = match ended {
            Ok((id, ())) => (id, None),
            Err(source) => (source.id(), Some(source)),
        };
        let named = self.names.remove(&id)?;
        let critical = named.critical && !*self.stopping.borrow();
        match (critical, failure) {
            (_, Some(source)) if source.is_cancelled() => None,
            (true, Some(source)) => Some(TaskError::Panicked {
                name: named.name,
                source,
            }),
            (true, None) => Some(TaskError::Ended { name: named.name }),
            (false, Some(source)) => {
                error!("the {} job failed: {source}", named.name);
                None
            }
            (false, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tasks of a command that is not stopping.
    fn running() -> (Tasks, watch::Sender<bool>) {
        let (stop, stopping) = watch::channel(false);
        (Tasks::new(stopping), stop)
    }

    #[tokio::test]
    async fn main_ends_normally_while_the_loops_run() {
        let (mut tasks, _stop) = running();
        tasks.spawn("forever", std::future::pending());
        tasks.spawn_job("one-off", async {});
        let result = tasks
            .run_until(tokio::time::sleep(Duration::from_millis(20)))
            .await;
        assert!(result.is_ok());
    }

    #[tokio::test]
    async fn a_critical_loop_that_ends_ends_the_command_naming_it() {
        let (mut tasks, _stop) = running();
        tasks.spawn("lease", async {});
        let result = tasks.run_until(std::future::pending::<()>()).await;
        let error = result.expect_err("the lease loop ended");
        assert_eq!(
            error.to_string(),
            "the lease loop ended while hawser still runs"
        );
    }

    #[tokio::test]
    async fn a_critical_loop_that_panics_ends_the_command_naming_it() {
        let (mut tasks, _stop) = running();
        tasks.spawn("status", async { panic!("boom") });
        let result = tasks.run_until(std::future::pending::<()>()).await;
        assert!(
            matches!(result, Err(TaskError::Panicked { name: "status", .. })),
            "{result:?}"
        );
    }

    #[tokio::test]
    async fn loops_end_as_asked_once_the_command_stops() {
        let (mut tasks, stop) = running();
        stop.send_replace(true);
        tasks.spawn("lease", async {});
        let result = tasks
            .run_until(tokio::time::sleep(Duration::from_millis(50)))
            .await;
        assert!(result.is_ok());
    }

    #[tokio::test]
    async fn draining_waits_for_the_loops_and_aborts_the_stuck_ones() {
        let (mut tasks, stop) = running();
        let (released_tx, released) = tokio::sync::oneshot::channel();
        let mut stopping = stop.subscribe();
        tasks.spawn("lease", async move {
            let _ = stopping.wait_for(|s| *s).await;
            let _ = released_tx.send(());
        });
        tasks.spawn("stuck", std::future::pending());
        stop.send_replace(true);
        tasks.drain(Duration::from_millis(100)).await;
        assert!(released.await.is_ok(), "the lease loop ended on stop");
    }

    #[tokio::test]
    async fn a_loop_that_does_not_watch_the_stop_is_cut_by_it() {
        let (mut tasks, stop) = running();
        tasks.spawn_until_stop("metrics", std::future::pending());
        stop.send_replace(true);
        let drained =
            tokio::time::timeout(Duration::from_secs(5), tasks.drain(Duration::from_secs(30)))
                .await;
        assert!(drained.is_ok(), "the follower ended with the stop");
    }

    #[tokio::test]
    async fn a_job_may_end_or_fail() {
        let (mut tasks, _stop) = running();
        tasks.spawn_job("done", async {});
        tasks.spawn_job("failed", async { panic!("boom") });
        let result = tasks
            .run_until(tokio::time::sleep(Duration::from_millis(50)))
            .await;
        assert!(result.is_ok());
    }
}
