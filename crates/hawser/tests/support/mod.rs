//! The harness of the process-level end-to-end tests (DESIGN.md §8, tier 4).
//!
//! ```text
//!  fixture manifests ──${VAR}──► Manifests ──`hawser render`──► out/ ──► HAProxy -db
//!  (tests/fixtures/<test>/)         ▲                                     │ 127.64.x.y:<free ports>
//!                                   │ addresses and ports                 ▼
//!  Backends: `hawser echo` per pod on 127.0.0.x ◄───────────────── requests from the test
//! ```
//!
//! Tests assert through helpers named after what they assert
//! (`expect_routed_to`, `expect_no_route`, `expect_status`).
//!
//! Everything is a real process: the `hawser` binary renders and serves echo
//! backends, and HAProxy (found through `HAWSER_HAPROXY`) serves the rendered
//! tree. Every process is a guard that kills it on drop. Ports are free ports
//! picked at run time, so tests run in parallel. Every wait is bounded by
//! [`TIMEOUT`], the one timeout of the suite.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different part of the harness"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the harness fails a test by panicking with a message"
)]

mod admin;
mod backends;
mod certs;
mod crash;
mod faketime;
mod fixture;
mod gateway;
mod h1_keep_alive;
mod h2_keep_alive;
mod haproxy;
mod http;
mod keep_alive;
mod load;
mod long_lived;
mod process;
pub mod proxy;
mod run;
mod slow;
mod split;
mod state_dir;

use std::time::Duration;

pub use backends::{Backends, Pod, pod};
pub use certs::TestCertificate;
pub use crash::{
    CRASH_HOSTS, crash_routes, expect_admin_address_free, expect_certificate,
    expect_certificate_of, expect_one_haproxy_master, expect_one_whole_version, expect_sane_tree,
    open_ssl_transaction,
};
pub use faketime::{FakeClock, faketime_library, log_line_time};
pub use fixture::{Manifests, Vars, fixture_dir, render, repository_dir};
pub use gateway::{Gateway, INFRA, WEB, expect_request_header, serve_gateway};
pub use h1_keep_alive::{H1KeepAlive, H1Report};
pub use h2_keep_alive::{H2KeepAlive, H2Report};
pub use haproxy::{Haproxy, NO_ROUTE_BODY};
pub use http::{Request, Response, TlsInfo, http1_get};
pub use keep_alive::{get_on_one_connection, read_response};
pub use load::{FleetLoad, Load, LoadReport, LoadTarget};
pub use long_lived::{GrpcCall, SlowUpload, UploadOutcome, WebSocketClient, grpc_message};
pub use process::{
    ChildGuard, Finished, haproxy_binary, haproxy_upgrade_binary, hawser_command, run_to_end,
    signal,
};
pub use run::{Run, RunOptions};
pub use slow::{SlowRequests, connect_refused, expect_refused_eventually};
pub use split::{AgentProc, ControllerProc, Pki, copy_dir};
pub use state_dir::{TreeSnapshot, haproxy_masters};

/// The one timeout of the suite: how long any process may take to become
/// ready or to finish, and any request to be answered. Generous, because
/// the machines that run the suite may be busy; a passing test never waits
/// for it.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A fixture being served: its echo backends, its manifests and HAProxy on
/// the rendered tree. Dereferences to the [`Haproxy`] to send requests.
#[derive(Debug)]
pub struct Served {
    pub haproxy: Haproxy,
    pub manifests: Manifests,
    pub backends: Backends,
}

impl std::ops::Deref for Served {
    type Target = Haproxy;

    fn deref(&self) -> &Haproxy {
        &self.haproxy
    }
}

/// Starts an echo backend per pod, fills the fixture `stem` with their
/// addresses and ports, renders it and serves it with HAProxy.
pub async fn serve(stem: &str, pods: &[Pod]) -> Served {
    serve_with(stem, pods, Vars::new()).await
}

/// [`serve`], with more fixture variables than the backends make.
pub async fn serve_with(stem: &str, pods: &[Pod], mut vars: Vars) -> Served {
    let backends = Backends::start(pods);
    vars.extend(backends.vars());
    let manifests = Manifests::from_fixture(stem, &vars);
    let haproxy = Haproxy::start(&manifests).await;
    Served {
        haproxy,
        manifests,
        backends,
    }
}
