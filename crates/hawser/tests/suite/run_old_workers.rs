//! Old workers are bounded: idle tunnels held across many reloads leave at
//! most `maxOldWorkers` old workers, and an old worker holding a tunnel leaves
//! `hardStopAfter` after its reload (fixture `run_old_workers/`).
//!
//! Oracle: HAProxy 3.0's configuration manual. `mworker-max-reloads
//! <number>`: "If the worker did not leave after a reload, once its number of
//! reloads is greater than this number, the worker will receive a SIGTERM".
//! With `maxOldWorkers: 2`, after any reload the master CLI's `show proc`
//! lists at most 2 workers under `# old workers`, and the two left are the
//! newest: a tunnel opened on each of the last 20 of 30 workers stays open on
//! the last two and is closed on the others. Without the bound every one of
//! those 20 workers would stay for `timeout tunnel` (1 h). `hard-stop-after
//! <time>`: "the maximum time ... for which the instance will remain alive
//! when a soft-stop is received", and a reload soft-stops the old worker: with
//! `hardStopAfter: 2s` the old worker holding a tunnel is gone, and its tunnel
//! closed, about 2 s after the reload, not before.

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::{Backends, Manifests, Run, RunOptions, TIMEOUT, Vars, pod, read_response};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

const NAMESPACE: &str = "bounds";

/// Serves the fixture with `settings` (YAML lines under `settings:`), and
/// no spare backends: every new Service takes a reload (see [`reload`]).
async fn serve(settings: &str) -> (Run, SocketAddr, Manifests, Backends) {
    let tcp = Run::spare_address();
    let backends = Backends::start(&[pod(NAMESPACE, "tunnel", "tunnel-0")]);
    let mut vars: Vars = backends.vars();
    vars.insert("TCP_PORT".to_string(), tcp.port().to_string());
    let manifests = Manifests::from_fixture("run_old_workers", &vars);
    let run = Run::start_with(
        manifests.path(),
        RunOptions {
            config_tail: format!("{settings}  spareBackends: 0\n"),
            ..RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;
    (run, tcp, manifests, backends)
}

/// A connection through the TCP listener, idle between requests.
struct Tunnel {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Tunnel {
    /// Opens a tunnel and proves it reaches the backend.
    async fn open(addr: SocketAddr) -> Tunnel {
        let stream = TcpStream::connect(addr).await.expect("connect");
        let mut tunnel = Tunnel {
            stream,
            buffer: Vec::new(),
        };
        assert!(
            tunnel.answers().await,
            "a new tunnel on {addr} is not served"
        );
        tunnel
    }

    /// True when a request on it is answered 200; false when it was closed.
    async fn answers(&mut self) -> bool {
        let request = "GET / HTTP/1.1\r\nHost: tunnel\r\nConnection: keep-alive\r\n\r\n";
        if self.stream.write_all(request.as_bytes()).await.is_err() {
            return false;
        }
        let exchange = read_response(&mut self.stream, &mut self.buffer);
        match tokio::time::timeout(TIMEOUT, exchange).await {
            Ok(Ok(Some(response))) => response.status == 200,
            Ok(Ok(None) | Err(_)) => false,
            Err(_) => panic!("no answer and no close within {TIMEOUT:?}"),
        }
    }
}

/// Makes a change that needs a reload and waits until it is applied by one.
async fn reload(run: &Run, round: usize) {
    run.reload_by_new_service(NAMESPACE, round).await;
}

/// The pids under `# old workers` in `show proc`.
async fn old_workers(run: &Run) -> Vec<u32> {
    let table = run.master().show_proc().await.expect("show proc");
    table.old_workers.iter().map(|w| w.pid).collect()
}

/// Waits until at most `bound` old workers are listed (a worker sent
/// SIGTERM is listed until the master reaps it); returns them.
async fn expect_old_workers_at_most(run: &Run, bound: usize, after: &str) -> Vec<u32> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let old = old_workers(run).await;
        if old.len() <= bound {
            return old;
        }
        assert!(
            Instant::now() < deadline,
            "{} old workers {old:?} {after}, more than {bound}\n{}",
            old.len(),
            run.output()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn thirty_reloads_over_twenty_idle_tunnels_leave_at_most_max_old_workers() {
    const BOUND: usize = 2;
    let (run, tcp, _manifests, _backends) =
        serve("  maxOldWorkers: 2\n  hardStopAfter: 1h\n").await;
    let mut tunnels = Vec::new();
    for round in 0..30 {
        if round >= 10 {
            // On the worker this reload turns into an old one.
            tunnels.push(Tunnel::open(tcp).await);
        }
        reload(&run, round).await;
        let old = expect_old_workers_at_most(&run, BOUND, &format!("after reload {round}")).await;
        if round >= 10 + BOUND {
            assert_eq!(old.len(), BOUND, "after reload {round}: {old:?}");
        }
    }
    assert_eq!(tunnels.len(), 20);
    // The two newest old workers still serve their tunnels; the workers of
    // the 18 before were terminated, and their tunnels closed with them.
    let (closed, open) = tunnels.split_at_mut(20 - BOUND);
    for (i, tunnel) in open.iter_mut().enumerate() {
        assert!(tunnel.answers().await, "tunnel {} was closed", 18 + i);
    }
    for (i, tunnel) in closed.iter_mut().enumerate() {
        assert!(!tunnel.answers().await, "tunnel {i} is still served");
    }
    assert_eq!(old_workers(&run).await.len(), BOUND);
    run.expect_metric("hawser_haproxy_old_workers", BOUND as f64)
        .await;
}

#[tokio::test]
async fn an_old_worker_holding_a_tunnel_leaves_after_hard_stop_after() {
    let (run, tcp, _manifests, _backends) =
        serve("  hardStopAfter: 2s\n  maxOldWorkers: 100\n").await;
    // The worker the start-up left behind holds nothing: it goes at once.
    expect_old_workers_at_most(&run, 0, "before the tunnel").await;
    let mut tunnel = Tunnel::open(tcp).await;
    // The reload, and so the old worker's soft stop, comes after this.
    let changed = Instant::now();
    reload(&run, 0).await;
    let old = old_workers(&run).await;
    assert_eq!(
        old.len(),
        1,
        "the worker holding the tunnel drains: {old:?}"
    );
    expect_old_workers_at_most(&run, 0, "after the reload").await;
    let gone_after = changed.elapsed();
    assert!(
        gone_after >= Duration::from_secs(2),
        "the old worker left {gone_after:?} after the change, before hardStopAfter"
    );
    assert!(!tunnel.answers().await, "its tunnel is still served");
}
