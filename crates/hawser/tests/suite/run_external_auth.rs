//! External authentication (`hawser.dev/auth-url`) against a real auth
//! service and the real HAProxy: the sub-request carries what the request
//! was; 2xx lets it through with the listed answer headers (and never the
//! client's own copies of them); 401 is 401, or a redirect to the sign-in
//! URL with `rd=` when one is set; 403 is 403; any other answer is 500; an
//! auth service nobody answers for is 503, never a pass. A changed sign-in
//! URL is a map change: the same worker serves it (fixture
//! `run_external_auth/`).

use crate::support;

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use support::{Backends, Manifests, Request, Run, RunOptions, pod};

/// The request heads the auth service was sent, in arrival order.
type Seen = Arc<Mutex<Vec<String>>>;

/// An auth service deciding by the `Authorization` header:
/// `Bearer alice` 200 with user and email headers (and one not to pass
/// on), `Bearer anon` 200 with none, `Bearer banned` 403, `Bearer broken`
/// 502, `Bearer basic` 401 with a challenge, anything else 401.
async fn auth_service(listener: TcpListener, seen: Seen) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        let seen = Arc::clone(&seen);
        tokio::spawn(async move {
            let mut head = Vec::new();
            let mut buffer = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&buffer[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head).to_string();
            let token = head
                .lines()
                .find_map(|l| l.strip_prefix("authorization: Bearer "))
                .or_else(|| {
                    head.lines()
                        .find_map(|l| l.strip_prefix("Authorization: Bearer "))
                })
                .unwrap_or_default()
                .trim()
                .to_string();
            seen.lock().unwrap().push(head);
            let (status, headers) = match token.as_str() {
                "alice" => (
                    "200 OK",
                    "X-Auth-Request-User: alice\r\nX-Auth-Request-Email: alice@example.com\r\nX-Secret: kept\r\n",
                ),
                "anon" => ("200 OK", ""),
                "banned" => ("403 Forbidden", ""),
                "broken" => ("502 Bad Gateway", ""),
                "basic" => (
                    "401 Unauthorized",
                    "WWW-Authenticate: Basic realm=\"shop\"\r\n",
                ),
                _ => ("401 Unauthorized", ""),
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        });
    }
}

fn bearer(host: &str, token: &str) -> Request {
    Request::get(host, "/").header("Authorization", &format!("Bearer {token}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_service_decides_and_nothing_passes_without_it() {
    let backends = Backends::start(&[pod("shop", "app", "app-0")]);
    let listener = TcpListener::bind("127.0.0.250:0").await.unwrap();
    let auth_addr = listener.local_addr().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.250:0").unwrap();
    let gone_port = closed.local_addr().unwrap().port();
    drop(closed);
    let seen: Seen = Arc::default();
    tokio::spawn(auth_service(listener, Arc::clone(&seen)));

    let mut vars = backends.vars();
    vars.insert("AUTH_ADDR".into(), auth_addr.ip().to_string());
    vars.insert("AUTH_PORT".into(), auth_addr.port().to_string());
    vars.insert("GONE_PORT".into(), gone_port.to_string());
    let manifests = Manifests::from_fixture("run_external_auth", &vars);
    let options = RunOptions {
        config_tail: "  authServiceNamespaces: [auth]\n".to_string(),
        ..RunOptions::default()
    };
    let run = Run::start_with(manifests.path(), options).await;
    run.wait_converged().await;
    run.expect_routed_to("open.example.com", "/", "app").await;

    // Allowed: the listed answer headers reach the app, the client's own
    // copies of them never do, and headers not listed stay behind.
    let reply = run
        .request(
            &bearer("guarded.example.com", "alice")
                .header("X-Auth-Request-User", "root")
                .header("X-Secret", "client"),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let echo = reply.echo();
    assert_eq!(echo.headers["x-auth-request-user"], ["alice"]);
    assert_eq!(echo.headers["x-auth-request-email"], ["alice@example.com"]);
    assert_eq!(
        echo.headers["x-secret"],
        ["client"],
        "not listed: untouched"
    );
    let reply = run
        .request(&bearer("guarded.example.com", "anon").header("X-Auth-Request-User", "root"))
        .await;
    assert_eq!(reply.status, 200);
    assert!(
        !reply.echo().headers.contains_key("x-auth-request-user"),
        "a client never names itself: {:?}",
        reply.echo().headers
    );

    // What the auth service was asked.
    let request = Request::get("guarded.example.com", "/orders/7?page=2")
        .method("DELETE")
        .header("Authorization", "Bearer alice");
    assert_eq!(run.request(&request).await.status, 200);
    let head = seen.lock().unwrap().last().cloned().unwrap().to_lowercase();
    for expected in [
        "get /oauth2/auth?from=hawser http/1.1",
        "host: oauth.auth.svc.cluster.local:4180",
        "authorization: bearer alice",
        "x-original-url: http://guarded.example.com/orders/7?page=2",
        "x-original-method: delete",
        "x-forwarded-host: guarded.example.com",
        "x-forwarded-proto: http",
        "x-forwarded-uri: /orders/7?page=2",
        "x-forwarded-for: 127.0.0.1",
    ] {
        assert!(head.contains(expected), "{expected:?} in:\n{head}");
    }
    assert!(!head.contains("x-hawser-auth"), "{head}");

    // Refusals.
    let plain = run.get("guarded.example.com", "/").await;
    assert_eq!(plain.status, 401);
    let challenged = run.request(&bearer("guarded.example.com", "basic")).await;
    assert_eq!(challenged.status, 401);
    assert_eq!(
        challenged.header("www-authenticate"),
        Some("Basic realm=\"shop\"")
    );
    let banned = run.request(&bearer("guarded.example.com", "banned")).await;
    assert_eq!(banned.status, 403);
    let broken = run.request(&bearer("guarded.example.com", "broken")).await;
    assert_eq!(broken.status, 500);
    let down = run.request(&bearer("down.example.com", "alice")).await;
    assert_eq!(down.status, 503, "unreachable is never a pass");

    // Sign-in: 401 becomes a redirect carrying where the client was going.
    let to_signin = run.get("signin.example.com", "/cart?id=1").await;
    assert_eq!(to_signin.status, 302);
    assert_eq!(
        to_signin.header("location"),
        Some(
            "https://login.example.com/start?flow=web&rd=http%3A%2F%2Fsignin.example.com%2Fcart%3Fid%3D1"
        )
    );
    // `hawser status` shows it; without the setting, an auth Service in
    // another namespace refuses the Ingress.
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        config.path(),
        "settings:\n  authServiceNamespaces: [auth]\n",
    )
    .unwrap();
    let status = |config: Option<&std::path::Path>| {
        let mut command = support::hawser_command(["status"]);
        command.arg("--manifests").arg(manifests.path());
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        support::run_to_end(&mut command).stdout
    };
    let shown = status(Some(config.path()));
    assert!(
        shown.contains("external authentication by http://oauth.auth.svc.cluster.local:4180/oauth2/auth?from=hawser, passing on x-auth-request-user, x-auth-request-email"),
        "{shown}"
    );
    let refused = status(None);
    assert!(
        refused.contains("authServiceNamespaces to list namespace \"auth\""),
        "{refused}"
    );

    // A new sign-in URL is a map change: the same worker serves it.
    let workers = run.worker_pids().await;
    let before = run.desired_generation().await;
    let ingresses = std::fs::read_to_string(manifests.path().join("ingresses.yaml")).unwrap();
    run.write_manifest(
        "ingresses.yaml",
        &ingresses.replace(
            "https://login.example.com/start?flow=web",
            "https://sso.example.com/",
        ),
    );
    run.expect_outcome_after(before, "runtime").await;
    let moved = run.get("signin.example.com", "/").await;
    assert_eq!(
        moved.header("location"),
        Some("https://sso.example.com/?rd=http%3A%2F%2Fsignin.example.com%2F")
    );
    assert_eq!(run.worker_pids().await, workers);
}
