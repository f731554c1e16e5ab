//! The sandbox around the real HAProxy, called directly (no policy in
//! front): configurations the policy would refuse load Lua that tries to
//! write, read, execute and connect outside what the sandbox allows, and
//! report what they managed, so a test can never pass because the Lua did
//! not run.

use crate::support;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use hawser_haproxy::sandbox::{Enforcement, Limits, Sandbox, SandboxedChild};
use tokio::io::AsyncReadExt as _;
use tokio::process::Command;

/// Lua run at parse time by `lua-load`: every attempt is recorded, and the
/// record ends the load as an error, so `haproxy -c` prints it.
const ATTEMPTS_LUA: &str = r#"
local marker, inside, secret = ...
local report = {}
local function note(text) report[#report + 1] = text end

local file, err = io.open(marker, "w")
if file then file:write("pwned"); file:close(); note("wrote-outside") else note("write-outside-denied") end

file, err = io.open(inside, "w")
if file then file:write("pwned"); file:close(); note("wrote-inside") else note("write-inside-denied") end

file, err = io.open(secret, "r")
if file then note("read:" .. tostring(file:read("a"))); file:close() else note("read-denied") end

local ok, how, code = os.execute("echo pwned > " .. marker .. ".exec")
note("execute:" .. tostring(ok) .. "," .. tostring(how) .. "," .. tostring(code))

local pipe = io.popen("cat " .. secret)
if pipe then
  note("popen:[" .. tostring(pipe:read("a")) .. "]")
  pipe:close()
else
  note("popen-denied")
end

error("hawser-report " .. table.concat(report, " "))
"#;

/// Lua that allocates `size` bytes at parse time and reports whether it could.
const ALLOCATE_LUA: &str = r#"
local size = tonumber(...)
local ok, result = pcall(string.rep, "x", size)
error("hawser-report " .. (ok and ("allocated:" .. #result) or ("allocation-failed:" .. tostring(result))))
"#;

fn haproxy_command(tree: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(support::real_haproxy().path());
    command
        .args(args)
        .arg("-C")
        .arg(tree)
        .args(["-f", "haproxy.cfg"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `haproxy -c` on `tree` in `sandbox`; returns its exit code and output.
async fn check(sandbox: Sandbox, tree: &Path) -> (Option<i32>, String) {
    let spawned = sandbox.spawn(haproxy_command(tree, &["-c"])).await.unwrap();
    assert_ne!(
        spawned.enforcement,
        Enforcement::None,
        "these tests need a kernel with Landlock"
    );
    let output = spawned.child.wait_with_output().await.unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

#[tokio::test]
async fn sandbox_lua_at_parse_time_cannot_write_read_or_execute_outside_the_tree() {
    let outside = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let secret = secrets.path().join("secret");
    std::fs::write(&secret, "hawser-secret-content").unwrap();
    let marker = outside.path().join("marker");
    let tree = support::tree(&[("attempts.lua", ATTEMPTS_LUA)]);
    let inside = tree.path().join("written-inside");
    let config = format!(
        "global\n    lua-load attempts.lua {} {} {}\n",
        marker.display(),
        inside.display(),
        secret.display()
    );
    std::fs::write(tree.path().join("haproxy.cfg"), config).unwrap();

    let (code, output) = check(Sandbox::new().read(tree.path()), tree.path()).await;

    assert_ne!(code, Some(0), "{output}");
    // The Lua ran to its end: the report is there.
    assert!(output.contains("hawser-report"), "{output}");
    for denied in ["write-outside-denied", "write-inside-denied", "read-denied"] {
        assert!(output.contains(denied), "{denied} missing:\n{output}");
    }
    assert!(!output.contains("execute:true"), "{output}");
    assert!(
        output.contains("popen-denied") || output.contains("popen:[]"),
        "{output}"
    );
    assert!(!output.contains("hawser-secret-content"), "{output}");
    assert!(!marker.exists());
    assert!(!outside.path().join("marker.exec").exists());
    assert!(!inside.exists());
}

#[tokio::test]
async fn sandbox_address_space_limit_stops_a_large_lua_allocation() {
    let tree = support::tree(&[("allocate.lua", ALLOCATE_LUA)]);
    let size = 256_u64 << 20;
    std::fs::write(
        tree.path().join("haproxy.cfg"),
        format!("global\n    lua-load allocate.lua {size}\n"),
    )
    .unwrap();

    // Within the default limits the allocation succeeds...
    let (_, output) = check(Sandbox::new().read(tree.path()), tree.path()).await;
    assert!(output.contains(&format!("allocated:{size}")), "{output}");

    // ...and under a 128 MiB address space it fails.
    let limits = Limits {
        address_space_bytes: 128 << 20,
        ..Limits::default()
    };
    let sandbox = Sandbox::new().read(tree.path()).limits(limits);
    let (_, output) = check(sandbox, tree.path()).await;
    assert!(output.contains("allocation-failed"), "{output}");
}

/// A loopback listener that counts the connections it accepts.
struct Listener(TcpListener);

impl Listener {
    fn open() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Self(listener)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    fn accepted(&self) -> usize {
        let mut count = 0;
        loop {
            match self.0.accept() {
                Ok(_) => count += 1,
                Err(error) if error.kind() == ErrorKind::WouldBlock => return count,
                Err(error) => panic!("accept failed: {error}"),
            }
        }
    }
}

/// A port free right now (the listener is closed again).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Lua that tries a TCP connection from a task once HAProxy runs.
const CONNECT_LUA: &str = r#"
local port = tonumber(...)
core.register_task(function()
  local socket = core.tcp()
  socket:settimeout(1)
  local ok, err = socket:connect("127.0.0.1", port)
  core.Alert("hawser-report connect:" .. tostring(ok) .. ":" .. tostring(err))
end)
"#;

async fn serve(sandbox: Sandbox, tree: &Path) -> SandboxedChild {
    let spawned = sandbox
        .spawn(haproxy_command(tree, &["-db"]))
        .await
        .unwrap();
    assert_ne!(spawned.enforcement, Enforcement::None);
    spawned
}

async fn stderr_of(mut spawned: SandboxedChild) -> String {
    let _ = spawned.child.start_kill();
    let _ = spawned.child.wait().await;
    let mut text = String::new();
    if let Some(mut stderr) = spawned.child.stderr.take() {
        let _ = stderr.read_to_string(&mut text).await;
    }
    text
}

#[tokio::test]
async fn sandbox_haproxy_connects_and_binds_only_the_ports_it_is_given() {
    let allowed = Listener::open();
    let denied = Listener::open();
    let http = free_port();
    let tree = support::tree(&[("connect.lua", CONNECT_LUA)]);
    let config = format!(
        "global\n    lua-load connect.lua {denied}\n\
         defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n\
         frontend http\n    bind 127.0.0.1:{http}\n    default_backend servers\n\
         backend servers\n    option httpchk\n    \
         server allowed 127.0.0.1:{allowed} check inter 100ms\n    \
         server denied 127.0.0.1:{denied} check inter 100ms\n",
        denied = denied.port(),
        allowed = allowed.port(),
    );
    std::fs::write(tree.path().join("haproxy.cfg"), config).unwrap();
    let sandbox = Sandbox::new()
        .read(tree.path())
        .bind_tcp([http])
        .connect_tcp([allowed.port()]);

    let running = serve(sandbox, tree.path()).await;
    // Health checks (which send a request, so the handshake completes)
    // reach the allowed port: HAProxy runs and connects.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut reached = 0;
    while reached < 3 && Instant::now() < deadline {
        reached += allowed.accepted();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if reached < 3 {
        panic!(
            "the allowed port was never reached:\n{}",
            stderr_of(running).await
        );
    }
    // Plenty of check intervals later, the other port has seen nothing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(denied.accepted(), 0);
    let stderr = stderr_of(running).await;
    assert!(stderr.contains("hawser-report connect:nil"), "{stderr}");

    // A listener on a port it was not given fails to bind.
    let other = free_port();
    let tree = support::tree(&[(
        "haproxy.cfg",
        &format!(
            "defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n\
             frontend http\n    bind 127.0.0.1:{other}\n"
        ),
    )]);
    let mut refused = serve(
        Sandbox::new().read(tree.path()).bind_tcp([http]),
        tree.path(),
    )
    .await;
    let status = tokio::time::timeout(Duration::from_secs(10), refused.child.wait())
        .await
        .expect("HAProxy kept running with a port it may not bind")
        .unwrap();
    assert!(!status.success());
    let stderr = stderr_of(refused).await;
    assert!(stderr.contains("cannot bind"), "{stderr}");
}
