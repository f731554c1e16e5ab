//! The webhook's bounds, over real TLS connections where the bound is one of
//! the connection: slow clients are cut off, a large body is refused, and
//! over a cap the answer is an error at once.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::*;

/// Short bounds, so that the tests see them act.
fn short_limits() -> WebhookLimits {
    WebhookLimits {
        handshake: Duration::from_millis(300),
        header_read: Duration::from_millis(300),
        request: Duration::from_secs(5),
        idle: Duration::from_millis(300),
        connection_age: Duration::from_secs(30),
        body_bytes: 4096,
        concurrent_reviews: 1,
        connections: 2,
    }
}

/// A self-signed `localhost` certificate: the server's config and a client
/// config trusting it.
fn tls_configs() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let issued = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert: CertificateDer<'static> = issued.cert.der().clone();
    let key = PrivateKeyDer::from(PrivatePkcs8KeyDer::from(issued.signing_key.serialize_der()));
    let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    (Arc::new(server), Arc::new(client))
}

/// A webhook served over TLS with `limits` on a free port; stops on drop of the sender.
struct Served {
    address: std::net::SocketAddr,
    client: Arc<rustls::ClientConfig>,
    _stop: oneshot::Sender<()>,
}

async fn serve(limits: WebhookLimits) -> Served {
    serve_state(limits, state()).await
}

async fn serve_state(limits: WebhookLimits, state: WebhookState) -> Served {
    let (server, client) = tls_configs();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let app = router_with(state, &limits, ReviewGuard::new(&limits));
    tokio::spawn(serve_tls_with(listener, server, app, limits, async {
        let _ = stopped.await;
    }));
    Served {
        address,
        client,
        _stop: stop,
    }
}

/// Reads until the server closes; how long that took.
async fn time_to_close(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the server kept the connection open for 5 s"
    );
    started.elapsed()
}

/// Sends one AdmissionReview for `object` over TLS; the whole HTTP answer.
async fn review_over_tls(served: &Served, object: Value) -> String {
    let tcp = TcpStream::connect(served.address).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(&served.client));
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let body = admission(object).to_string();
    let request = format!(
        "POST /validate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test]
async fn a_review_over_tls_is_answered_within_the_bounds() {
    let served = serve(short_limits()).await;
    let response = review_over_tls(&served, ingress("/shop")).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(r#""allowed":true"#), "{response}");
}

/// The issue's polyglot, sent to a running webhook over TLS with the real
/// HAProxy when there is one: a `base/haproxy.cfg` override that is also a
/// Lua file loading itself through a quoted `"lua-load"`. It is denied,
/// naming the line, and its Lua never runs (it would write the marker).
#[tokio::test]
async fn the_polyglot_sent_to_the_running_webhook_is_denied_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("lua-ran");
    let polyglot = format!(
        "--[[\nglobal\n  \"lua-load\" haproxy.cfg\ndefaults\n  mode http\n--]]\n\
         local f = io.open(\"{}\", \"w\") f:write(\"ran\") f:close()\n",
        marker.display()
    );
    let mut state = state();
    state.haproxy = hawser_haproxy::HaproxyBinary::locate().ok();
    let limits = WebhookLimits {
        request: Duration::from_secs(10),
        ..short_limits()
    };
    let served = serve_state(limits, state).await;
    let object = json!({
        "apiVersion": "hawser.dev/v1alpha1",
        "kind": "HawserConfig",
        "metadata": { "name": "hawser", "namespace": "hawser" },
        "spec": { "templates": { "overrides": { "base/haproxy.cfg": polyglot } } }
    });
    let response = review_over_tls(&served, object).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(r#""allowed":false"#), "{response}");
    assert!(
        response.contains("lua-load"),
        "the reason names the line: {response}"
    );
    assert!(!marker.exists(), "the polyglot's Lua ran");
}

#[tokio::test]
async fn a_client_that_never_finishes_the_tls_handshake_is_cut_off() {
    let served = serve(short_limits()).await;
    let mut tcp = TcpStream::connect(served.address).await.unwrap();
    // Half a ClientHello's record header, then silence.
    tcp.write_all(&[0x16, 0x03]).await.unwrap();
    let took = time_to_close(&mut tcp).await;
    assert!(
        took >= Duration::from_millis(250),
        "cut too early: {took:?}"
    );
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let served = serve(WebhookLimits {
        idle: Duration::from_secs(10),
        ..short_limits()
    })
    .await;
    let tcp = TcpStream::connect(served.address).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(&served.client));
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    tls.write_all(b"POST /validate HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    // A header byte every 100 ms: the connection is never idle, the headers never end.
    let started = Instant::now();
    let (mut read, mut write) = tokio::io::split(tls);
    let trickle = tokio::spawn(async move {
        while write.write_all(b"x").await.is_ok() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let took = time_to_close(&mut read).await;
    trickle.abort();
    assert!(
        took >= Duration::from_millis(250),
        "cut too early: {took:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2), "{took:?}");
}

#[tokio::test]
async fn a_client_that_sends_nothing_after_the_handshake_is_cut_off() {
    let served = serve(WebhookLimits {
        header_read: Duration::from_secs(10),
        ..short_limits()
    })
    .await;
    let tcp = TcpStream::connect(served.address).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(&served.client));
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let took = time_to_close(&mut tls).await;
    assert!(took < Duration::from_secs(2), "kept open: {took:?}");
}

#[tokio::test]
async fn connections_over_the_cap_are_closed_at_once() {
    let served = serve(WebhookLimits {
        handshake: Duration::from_secs(10),
        ..short_limits()
    })
    .await;
    // Two idle connections fill the cap (2) for the length of their handshake timeout.
    let _first = TcpStream::connect(served.address).await.unwrap();
    let _second = TcpStream::connect(served.address).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = TcpStream::connect(served.address).await.unwrap();
    let took = time_to_close(&mut third).await;
    assert!(
        took < Duration::from_secs(2),
        "not closed at once: {took:?}"
    );
}

fn post(body: impl Into<axum::body::Body>) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::post("/validate")
        .header("content-type", "application/json")
        .body(body.into())
        .unwrap()
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused() {
    let limits = short_limits();
    let app = router_with(state(), &limits, ReviewGuard::new(&limits));
    let mut object = ingress("/shop");
    object["metadata"]["annotations"] = json!({ "padding": "x".repeat(8192) });
    let response = app
        .oneshot(post(admission(object).to_string()))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn over_the_review_cap_the_answer_is_503_at_once() {
    let limits = short_limits();
    let guard = ReviewGuard::new(&limits);
    let app = router_with(state(), &limits, guard.clone());
    let held = guard.try_slot().expect("the only slot");
    let started = Instant::now();
    let response = app
        .clone()
        .oneshot(post(admission(ingress("/shop")).to_string()))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(started.elapsed() < Duration::from_secs(1));
    // Health checks take no slot.
    let health = axum::http::Request::get("/healthz")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.clone().oneshot(health).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);

    drop(held);
    let response = app
        .oneshot(post(admission(ingress("/shop")).to_string()))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_review_that_overruns_its_deadline_is_answered_504() {
    let limits = WebhookLimits {
        request: Duration::from_millis(200),
        ..short_limits()
    };
    let app = router_with(state(), &limits, ReviewGuard::new(&limits));
    // A body that never ends: the deadline covers reading it.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(1);
    tx.send(Ok(axum::body::Bytes::from_static(b"{\"apiVersion\":")))
        .await
        .unwrap();
    let body = axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    let started = Instant::now();
    let response = app.oneshot(post(body)).await.unwrap();
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(tx);
}
