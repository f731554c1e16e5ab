//! Regular expressions are judged by PCRE2 as HAProxy compiles them: what
//! hawser accepts, the real HAProxy accepts (`haproxy -c`), and a route with
//! a regex HAProxy would refuse is rejected alone while the rest of the
//! render passes (fixture `gateway_regex/`).

use crate::support;

use std::fs;
use std::process::Command;

use support::{fixture_dir, haproxy_binary, hawser_command, render, run_to_end};

/// Accepted by hawser, so HAProxy must accept them too.
const ACCEPTED: &[&str] = &[
    r"/(?<=v1/)items",
    r"/(?<!admin)/x",
    r"/a(?=b).*",
    r"/a++b\d*+",
    r"/(?>a+)b",
    r"/(?<n>[a-z]+)/\k<n>",
    r"/(?i)CaSe",
    r"/(?i:x)y",
    r"/\x{ff}",
    r"/[[:alpha:]]+",
    r"/\Q$a.b\E",
    r"/\$HOME",
    r"/a{2,}",
    r"[\\\]]{2,}",
    r"/\p{L}",
];

/// Refused by HAProxy, so hawser must refuse them.
const REFUSED_BY_HAPROXY: &[&str] = &[
    r"/\x{100}",
    r"/a(b",
    r"/a)b",
    r"(a)\1",
    r"/a{2,1}",
    r"/[z-a]",
    r"/\Qa",
    r"/(?<=a+)b",
    r"/(?P<n>a)(?P<n>b)",
    r"/\",
];

/// Refused by hawser though HAProxy would take them, deliberately: once
/// wrapped in `^(...)$` they would move the anchors.
const STRICTER: &[&str] = &[r"/a)|(/b", r"/a)(b"];

/// Runs `haproxy -c` on a frontend matching the path against `^(<regex>)$`,
/// written as the templates write it (double quotes, `\`, `"` and `$` escaped).
fn haproxy_accepts(regex: &str) -> bool {
    let work = tempfile::tempdir().expect("temporary directory");
    let mut quoted = String::new();
    for c in format!("^({regex})$").chars() {
        if matches!(c, '"' | '\\' | '$') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    let config = format!(
        "defaults\n  mode http\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n\
         frontend f\n  bind 127.0.0.1:8\n  http-request deny if {{ path -m reg \"{quoted}\" }}\n"
    );
    let path = work.path().join("haproxy.cfg");
    fs::write(&path, config).expect("write config");
    let output = Command::new(haproxy_binary())
        .arg("-c")
        .arg("-f")
        .arg(&path)
        .output()
        .expect("run haproxy -c");
    output.status.success()
}

#[test]
fn what_hawser_accepts_haproxy_compiles() {
    for regex in ACCEPTED {
        assert_eq!(
            hawser_render::validate::regex("path regex", regex),
            Ok(()),
            "hawser should accept {regex}"
        );
        assert!(haproxy_accepts(regex), "HAProxy refuses {regex}");
    }
}

#[test]
fn what_haproxy_refuses_hawser_refuses() {
    for regex in REFUSED_BY_HAPROXY {
        assert!(!haproxy_accepts(regex), "HAProxy accepts {regex}");
        assert!(
            hawser_render::validate::regex("path regex", regex).is_err(),
            "hawser should refuse {regex}"
        );
    }
    for regex in STRICTER {
        assert!(haproxy_accepts(regex), "HAProxy refuses {regex}");
        assert!(hawser_render::validate::regex("path regex", regex).is_err());
    }
}

#[test]
fn a_route_haproxy_would_refuse_is_rejected_alone_and_the_rest_passes_haproxy() {
    let mut command = hawser_command(["validate"]);
    command.arg("--manifests").arg(fixture_dir("gateway_regex"));
    let run = run_to_end(&mut command);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    assert!(
        run.stderr.contains("rejected: HTTPRoute tenant-a/bad: ")
            && run
                .stderr
                .contains(r#"path regex "/\\x{100}" does not compile"#),
        "{}",
        run.describe()
    );
    assert!(
        !run.stderr.contains("tenant-b/tricky"),
        "{}",
        run.describe()
    );
    assert!(
        run.stdout.contains("1 rejected objects") && run.stdout.contains("accepts the rest"),
        "{}",
        run.describe()
    );
    // The rest HAProxy accepted holds tenant-b's regexes.
    let out = tempfile::tempdir().expect("temporary directory");
    let rendered = render(&fixture_dir("gateway_regex"), &out.path().join("out"), None);
    assert!(rendered.status.success(), "{}", rendered.describe());
    let config = fs::read_to_string(out.path().join("out/haproxy.cfg")).expect("haproxy.cfg");
    for regex in [r"(?<=v1/)items", r"\\k<name>(?>x+)y", r"\\Q\$a.b\\E"] {
        assert!(config.contains(regex), "{regex} is not in haproxy.cfg");
    }
}
