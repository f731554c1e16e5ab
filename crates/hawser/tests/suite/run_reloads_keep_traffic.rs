//! Traffic that outlives a reload survives 30 of them in a row: HTTP/2
//! keep-alive, a WebSocket, a long upload and a bidirectional gRPC stream,
//! all over TLS, and HTTP/1.1 keep-alive, through `hawser run` (fixture
//! `run_reloads_keep_traffic/`).
//!
//! ```text
//!  h1 client (GETs back to back, new connection when closed) ─► HAProxy :http ─► echo
//!  h2 client (GETs back to back, new connection on GOAWAY) ─┐
//!  WebSocket (opened before reload 1, echoes after each) ──┤
//!  upload (one POST, a chunk of body after each reload) ───┼─► HAProxy :https ─► echo pods
//!  gRPC stream (opened before reload 1, echoes after each) ┘
//!  test: reload 1 (worker pid changes) ... reload 30, then end them all
//! ```
//!
//! Oracles: a reload starts a new worker and soft-stops the old one, which
//! "stays until its last connection closes" within `hardStopAfter` and
//! `maxOldWorkers` (docs/security.md, "Old workers"). So with
//! `maxOldWorkers: 40` every connection opened before the first reload is
//! still served after the 30th, by the first worker, listed under `# old
//! workers` until they end and gone once they have: the WebSocket echoes
//! after every reload, the gRPC call echoes after every reload and ends with
//! `grpc-status: 0`, and the upload's every byte reaches the backend (its
//! `body_bytes` and `body_sha256`). An HTTP/2 connection of an old worker
//! gets a GOAWAY (RFC 9113 §6.8): the client opens a new one, and only
//! requests HTTP/2 says the server did not process (never sent, above
//! the GOAWAY's last-stream-id, REFUSED_STREAM) may be retried; no request
//! fails. An HTTP/1.1 connection of an old worker is closed, between
//! requests at once or after an answer with `Connection: close` (HAProxy's
//! manual, `close-spread-time`): the client opens a new one, and only a GET
//! sent as an idle connection closed, unanswered, may be retried (RFC 9112
//! §9.3.1); no request fails. With the default `maxOldWorkers` (3), HAProxy's
//! `mworker-max-reloads 3` terminates a worker "once its number of reloads
//! is greater than this number": a WebSocket lasts 3 reloads, is closed at
//! the 4th, and a new one works. And since hawser sets `option
//! idle-close-on-response` ("avoid closing idle frontend connections if a
//! soft stop is in progress"), an old worker closes an idle HTTP/1.1
//! connection only after answering its next request: no request goes
//! unanswered (without it, most reloads caught one).

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    Backends, GrpcCall, H1KeepAlive, H2KeepAlive, Manifests, Run, RunOptions, SlowUpload, TIMEOUT,
    TestCertificate, Vars, WebSocketClient, pod,
};

const NAMESPACE: &str = "traffic";
const RELOADS: usize = 30;
const H1_HOST: &str = "h1.example.com";
const H2_HOST: &str = "h2.example.com";
const WS_HOST: &str = "ws.example.com";
const UPLOAD_HOST: &str = "upload.example.com";
const GRPC_HOST: &str = "grpc.example.com";
/// The body of the upload comes in one chunk before the first reload and
/// one after each: about 2 MiB, more than the echo once read of a body.
const CHUNK: usize = 64 * 1024;

/// Serves the fixture with `settings` (YAML lines under `settings:`) and no
/// spare backends, so that every new Service takes a reload; `rest` follows
/// the settings in the config file.
async fn serve(settings: &str, rest: &str) -> (Run, Manifests, Backends) {
    let backends = Backends::start(&[
        pod(NAMESPACE, "web", "web-a"),
        pod(NAMESPACE, "grpc", "grpc-a"),
    ]);
    let certificate = TestCertificate::made(
        "traffic",
        &[H2_HOST, WS_HOST, UPLOAD_HOST, GRPC_HOST],
        (2025, 1, 1),
        (2035, 1, 1),
    );
    let mut vars: Vars = backends.vars();
    vars.insert("TRAFFIC_TLS_CRT".to_string(), certificate.cert_yaml());
    vars.insert("TRAFFIC_TLS_KEY".to_string(), certificate.key_yaml());
    let manifests = Manifests::from_fixture("run_reloads_keep_traffic", &vars);
    let run = Run::start_with(
        manifests.path(),
        RunOptions {
            config_tail: format!("{settings}  spareBackends: 0\n{rest}"),
            ..RunOptions::default()
        },
    )
    .await;
    run.wait_converged().await;
    (run, manifests, backends)
}

/// Makes a change that needs a reload (an Ingress to a Service of a new
/// name, so a new backend), waits until it is applied by one, and checks a
/// new worker serves: returns its pid.
async fn reload(run: &Run, round: usize, worker: u32) -> u32 {
    run.reload_by_new_service(NAMESPACE, round).await;
    let serving = run.serving_worker().await;
    assert_ne!(
        serving,
        worker,
        "reload {round}: the same worker serves\n{}",
        run.output()
    );
    serving
}

fn reloads(status: &Value) -> u64 {
    status["reloads"]
        .as_u64()
        .unwrap_or_else(|| panic!("/status has no reloads: {status:#}"))
}

/// The pids under `# old workers` in `show proc`.
async fn old_workers(run: &Run) -> Vec<u32> {
    let table = run.master().show_proc().await.expect("show proc");
    table.old_workers.iter().map(|w| w.pid).collect()
}

/// Waits until HAProxy no longer lists worker `pid` at all.
async fn expect_worker_gone(run: &Run, pid: u32, after: &str) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let table = run.master().show_proc().await.expect("show proc");
        let listed = table
            .workers
            .iter()
            .chain(&table.old_workers)
            .any(|w| w.pid == pid);
        if !listed {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "worker {pid} is still listed {after}: {table:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The `n`th chunk of the upload: bytes that differ from chunk to chunk,
/// and a size that does too.
fn chunk(n: usize) -> Vec<u8> {
    (0..CHUNK + n).map(|i| (i * 31 + n * 7) as u8).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_a_websocket_an_upload_and_a_grpc_stream_outlive_thirty_reloads() {
    let (run, _manifests, _backends) =
        serve("  maxOldWorkers: 40\n  hardStopAfter: 10m\n", "").await;
    let first_status = run.status().await;
    let first_worker = run.serving_worker().await;

    let mut socket = WebSocketClient::open(run.https, WS_HOST, "/chat")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", run.output()));
    socket.echo("before the first reload").await.unwrap();
    let mut call = GrpcCall::open(run.https, GRPC_HOST, "/echo.Echo/Chat")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", run.output()));
    call.echo(b"before the first reload").await.unwrap();
    let mut upload = SlowUpload::start(run.https, UPLOAD_HOST, "/upload")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", run.output()));
    upload.send(&chunk(0)).await.unwrap();
    let h1 = H1KeepAlive::start(run.http, H1_HOST);
    let h2 = H2KeepAlive::start(run.https, H2_HOST);

    let mut worker = first_worker;
    for round in 1..=RELOADS {
        worker = reload(&run, round, worker).await;
        let after = format!("after reload {round}");
        socket
            .echo(&after)
            .await
            .unwrap_or_else(|e| panic!("WebSocket {after}: {e}\n{}", run.output()));
        call.echo(after.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("gRPC stream {after}: {e}\n{}", run.output()));
        upload
            .send(&chunk(round))
            .await
            .unwrap_or_else(|e| panic!("upload {after}: {e}\n{}", run.output()));
    }
    let h2_report = h2.stop().await;
    let h1_report = h1.stop().await;

    // The first worker still holds what was opened on it, 30 reloads on.
    let old = old_workers(&run).await;
    assert!(
        old.contains(&first_worker),
        "the first worker {first_worker} is no longer an old worker: {old:?}"
    );
    let grpc_status = call
        .finish()
        .await
        .unwrap_or_else(|e| panic!("gRPC stream end: {e}\n{}", run.output()));
    let uploaded = upload
        .finish()
        .await
        .unwrap_or_else(|e| panic!("upload end: {e}\n{}", run.output()));
    socket.echo("after the last reload").await.unwrap();
    socket.close().await;
    // Its last connection closed, it leaves, long before hardStopAfter.
    expect_worker_gone(&run, first_worker, "once its connections ended").await;

    let last_status = run.status().await;
    println!(
        "{RELOADS} reloads; HTTP/2: {h2_report}; HTTP/1.1: {h1_report}; upload: {} bytes",
        uploaded.sent_bytes
    );
    assert_eq!(grpc_status, "0", "the gRPC stream's grpc-status");
    assert_eq!(
        uploaded.response.status,
        200,
        "{:?}",
        uploaded.response.text()
    );
    let reply = uploaded.echo();
    assert_eq!(
        (reply.body_bytes, reply.body_sha256.as_str()),
        (uploaded.sent_bytes, uploaded.sent_sha256.as_str()),
        "the backend did not receive the upload whole"
    );
    assert_eq!(
        reloads(&last_status) - reloads(&first_status),
        RELOADS as u64,
        "/status counts another number of reloads: {last_status:#}"
    );
    assert_eq!(
        h2_report.failures, 0,
        "HTTP/2 requests failed across the reloads: {h2_report}"
    );
    assert!(
        h2_report.connections >= 2 && h2_report.ended_cleanly == h2_report.connections,
        "the HTTP/2 client should have moved to a new connection after a GOAWAY, every \
         connection ending cleanly: {h2_report}"
    );
    assert!(
        h2_report.answered >= RELOADS as u64,
        "the HTTP/2 client barely ran: {h2_report}"
    );
    assert_eq!(
        h1_report.failures, 0,
        "HTTP/1.1 requests failed across the reloads: {h1_report}"
    );
    assert!(
        h1_report.connections >= 2 && h1_report.answered >= RELOADS as u64,
        "the HTTP/1.1 client should have moved to a new connection: {h1_report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_default_max_old_workers_a_websocket_outlives_that_many_reloads_then_closes() {
    let max_old_workers = hawser_render::Settings::default().max_old_workers as usize;
    let (run, _manifests, _backends) = serve("", "").await;
    let first_worker = run.serving_worker().await;
    let mut socket = WebSocketClient::open(run.https, WS_HOST, "/chat")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", run.output()));
    socket.echo("before the first reload").await.unwrap();

    let mut worker = first_worker;
    for round in 1..=max_old_workers {
        worker = reload(&run, round, worker).await;
        socket.echo(&format!("after reload {round}")).await.unwrap_or_else(|e| {
            panic!(
                "the WebSocket should outlive {max_old_workers} reloads, after reload {round}: {e}"
            )
        });
    }
    // One more, and the first worker has outlived more than maxOldWorkers.
    reload(&run, max_old_workers + 1, worker).await;
    socket.expect_closed().await.unwrap_or_else(|e| {
        panic!(
            "the WebSocket should be closed at reload {}: {e}",
            max_old_workers + 1
        )
    });
    expect_worker_gone(&run, first_worker, "after it outlived maxOldWorkers").await;
    let mut fresh = WebSocketClient::open(run.https, WS_HOST, "/chat")
        .await
        .unwrap_or_else(|e| panic!("a new WebSocket: {e}\n{}", run.output()));
    fresh.echo("on the current worker").await.unwrap();
    fresh.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_http1_keep_alive_request_goes_unanswered_across_reloads() {
    const ROUNDS: usize = 10;
    let (run, _manifests, _backends) = serve("", "").await;
    let mut worker = run.serving_worker().await;
    let h1 = H1KeepAlive::start(run.http, H1_HOST);
    for round in 1..=ROUNDS {
        worker = reload(&run, round, worker).await;
    }
    let report = h1.stop().await;
    println!("{ROUNDS} reloads; HTTP/1.1: {report}");
    assert_eq!(
        (report.failures, report.retried_on_closed_idle),
        (0, 0),
        "every request should be answered: {report}"
    );
    // Every connection but the last ended with an answer saying so.
    assert!(
        report.closed_after_answer >= 1 && report.connections == report.closed_after_answer + 1,
        "each old worker should close its connection after an answer: {report}"
    );
}
