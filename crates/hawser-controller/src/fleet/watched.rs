//! The fleet's own loops (one link per agent, the followers), each in a
//! span named after it, and watched: one that ends while the fleet runs
//! (a panic, or a return it should not make) is reported through
//! [`super::Fleet::failure`], so the command fails loudly instead of leaving
//! an agent that nobody pushes to.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument as _;

/// Where the watched loops report their end, by name.
pub type Ended = mpsc::UnboundedSender<String>;

/// A watched loop, stoppable without it counting as a failure.
#[derive(Debug)]
pub struct Watched {
    task: JoinHandle<()>,
    released: Arc<AtomicBool>,
}

impl Watched {
    /// Runs `task` in `span`; its end, however it comes, is reported on
    /// `ended` unless [`Watched::release`] came first.
    pub fn spawn(
        name: String,
        span: tracing::Span,
        task: impl Future<Output = ()> + Send + 'static,
        ended: Ended,
    ) -> Watched {
        let released = Arc::new(AtomicBool::new(false));
        let guard = EndGuard {
            name,
            ended,
            released: Arc::clone(&released),
        };
        let task = tokio::spawn(
            async move {
                // Dropped when the loop returns, panics or is aborted.
                let _guard = guard;
                task.await;
            }
            .instrument(span),
        );
        Watched { task, released }
    }

    /// Stops the loop at once (its agent left the fleet): not a failure.
    pub fn release(self) {
        self.released.store(true, Ordering::SeqCst);
        self.task.abort();
    }

    /// Waits for the loop to end (after the fleet's stop).
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

struct EndGuard {
    name: String,
    ended: Ended,
    released: Arc<AtomicBool>,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        if !self.released.load(Ordering::SeqCst) {
            let _ = self.ended.send(std::mem::take(&mut self.name));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[tokio::test]
    async fn a_loop_that_panics_or_returns_is_reported_one_released_is_not() {
        let (ended, mut reports) = mpsc::unbounded_channel();
        let span = tracing::Span::none;
        let panics = Watched::spawn(
            "panicking loop".to_string(),
            span(),
            async { panic!("a bug") },
            ended.clone(),
        );
        panics.join().await;
        assert_eq!(reports.recv().await.unwrap(), "panicking loop");

        Watched::spawn(
            "returning loop".to_string(),
            span(),
            async {},
            ended.clone(),
        )
        .join()
        .await;
        assert_eq!(reports.recv().await.unwrap(), "returning loop");

        let released = Watched::spawn(
            "released loop".to_string(),
            span(),
            std::future::pending(),
            ended.clone(),
        );
        released.release();
        drop(ended);
        tokio::task::yield_now().await;
        assert_eq!(reports.recv().await, None, "released: not a failure");
    }
}
