//! Leader election against the fake API server, with the real
//! kube-lease-manager and kube-rs client.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::time::Duration;

use hawser_fake_api::FakeApi;
use tokio::sync::{oneshot, watch};

use super::*;

const PATIENCE: Duration = Duration::from_secs(30);

fn options(identity: &str) -> LeaseOptions {
    let mut options = LeaseOptions::new("hawser", "hawser-controller", identity);
    options.duration = Duration::from_secs(3);
    options.grace = Duration::from_secs(1);
    options
}

struct Candidate {
    leading: watch::Receiver<Option<u64>>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

fn candidate(client: &::kube::Client, identity: &str) -> Candidate {
    let (tx, leading) = watch::channel(None);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(lead(client.clone(), options(identity), tx, async {
        let _ = stopped.await;
    }));
    Candidate {
        leading,
        stop: Some(stop),
        task,
    }
}

async fn leads(candidate: &mut Candidate) -> u64 {
    tokio::time::timeout(PATIENCE, candidate.leading.wait_for(Option::is_some))
        .await
        .expect("never led")
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leads_and_a_successor_takes_over_with_a_higher_epoch() {
    let (_fake, client) = FakeApi::start();
    let mut first = candidate(&client, "controller-a");
    let first_epoch = leads(&mut first).await;
    let mut second = candidate(&client, "controller-b");
    // The second waits while the first holds the Lease.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(*second.leading.borrow(), None, "two leaders at once");
    assert_eq!(*first.leading.borrow(), Some(first_epoch));

    // The leader stops (a rollout): it steps down at once and releases.
    let _ = first.stop.take().unwrap().send(());
    first.task.await.unwrap();
    assert_eq!(
        *first.leading.borrow(),
        None,
        "a stopped leader stops leading"
    );
    let second_epoch = leads(&mut second).await;
    assert!(
        second_epoch > first_epoch,
        "the successor's epoch {second_epoch} must fence the first's {first_epoch}"
    );
    let _ = second.stop.take().unwrap().send(());
    second.task.await.unwrap();
}
