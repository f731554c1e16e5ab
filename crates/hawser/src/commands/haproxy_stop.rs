//! `hawser haproxy-stop`: the preStop hook of HAProxy's container. Waits
//! while endpoints and load balancers forget the pod (HAProxy still
//! serves), then stops HAProxy softly within a deadline.
//!
//! ```text
//!  sleep --wait-before ──► SIGUSR1 to the master ──► gone within --drain: exit 0
//!                                                   └► SIGTERM (connections cut) ──► exit 3
//! ```
//!
//! Without the hook the kubelet's SIGTERM would be HAProxy's hard stop,
//! cutting every request in flight.

use std::process::ExitCode;
use std::time::Duration;

use hawser_haproxy::{SoftStop, StopOutcome};
use tracing::{info, warn};

use crate::cli::HaproxyStopArgs;

/// Exit code when the drain ran out and HAProxy was hard-stopped.
const EXIT_HARD_STOPPED: u8 = 3;

pub async fn run(args: &HaproxyStopArgs) -> anyhow::Result<ExitCode> {
    if args.wait_before_secs > 0 {
        info!(
            "waiting {} s before stopping haproxy: it keeps serving while the pod's endpoints are removed",
            args.wait_before_secs
        );
        tokio::time::sleep(Duration::from_secs(args.wait_before_secs)).await;
    }
    let stop = SoftStop {
        master_socket: args.master_socket.clone(),
        drain: Duration::from_secs(args.drain_secs),
        hard_stop_wait: Duration::from_secs(args.hard_stop_wait_secs),
    };
    match stop.run().await? {
        StopOutcome::Drained { master, took } => {
            info!(
                pid = master,
                ?took,
                "haproxy finished its connections and stopped"
            );
            Ok(ExitCode::SUCCESS)
        }
        StopOutcome::HardStopped { master } => {
            warn!(
                pid = master,
                "haproxy was hard-stopped after --drain {} s: connections still open were closed",
                args.drain_secs
            );
            Ok(ExitCode::from(EXIT_HARD_STOPPED))
        }
    }
}
