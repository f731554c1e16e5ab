//! Deny reasons: bounded, never echoing what HAProxy read from a file, and
//! a review leaves the snapshot it judged against as it was.

use super::super::reason::{bounded, haproxy_rejection};
use super::*;

/// HAProxy 3.0's output for a config that loads a Lua file and reads
/// another file as configuration (the lines as it prints them).
const OUTPUT: &str = "\
[NOTICE]   (22345) : haproxy version is 3.0.11-9e587df
[ALERT]    (22345) : config : parsing [/tmp/hawser-check-Ab12/haproxy.cfg:2] : error in Lua file '/etc/hawser/x.lua': /etc/hawser/x.lua:1: syntax error near 'topsecretvalue42'
[ALERT]    (22345) : config : parsing [/etc/passwd:2]: unknown keyword 'root:x:0:0:root:/root:/bin/bash' out of section.
[ALERT]    (22345) : config : parsing [/tmp/hawser-check-Ab12/haproxy.cfg:9] : unknown keyword 'nosuchdirective' in 'global' section; did you mean 'nbthread' maybe ?
stack traceback: topsecretvalue42
[ALERT]    (22345) : config : Fatal errors found in configuration.";

const CONFIG: &str = "global\n  lua-load /etc/hawser/x.lua\n  nosuchdirective 1\n";

#[test]
fn haproxys_alerts_keep_the_location_and_keyword_and_no_file_content() {
    let reason = haproxy_rejection(Some(9), Some("snippet global-bad"), OUTPUT, CONFIG);
    assert_eq!(
        reason,
        "HAProxy rejects the rendered configuration at haproxy.cfg line 9 (from snippet global-bad):\n\
         haproxy.cfg:2: error in Lua file '/etc/hawser/x.lua'\n\
         passwd:2: unknown keyword '…' out of section.\n\
         haproxy.cfg:9: unknown keyword 'nosuchdirective' in 'global' section; did you mean '…' maybe ?"
    );
    for leaked in [
        "topsecretvalue42",
        "root:x",
        "/tmp/hawser-check",
        "traceback",
    ] {
        assert!(!reason.contains(leaked), "{leaked} in {reason}");
    }
}

#[test]
fn an_unclosed_quote_ends_the_message() {
    let output =
        "[ALERT] (1) : config : parsing [/tmp/hawser-check-x/haproxy.cfg:3] : bad value 'abc";
    let reason = haproxy_rejection(None, None, output, "abc");
    assert!(reason.ends_with("haproxy.cfg:3: bad value"), "{reason}");
}

#[test]
fn reasons_are_cut_on_a_char_boundary_with_an_ellipsis() {
    assert_eq!(bounded("short"), "short");
    let long = "é".repeat(MAX_REASON_BYTES);
    let cut = bounded(&long);
    assert!(cut.len() <= MAX_REASON_BYTES, "{}", cut.len());
    assert!(cut.ends_with("é…"), "{cut}");
}

#[tokio::test]
async fn a_deny_reason_sent_back_is_bounded() {
    // The path's error quotes the path: 8 KiB of it.
    let path = format!("/{} x", "a".repeat(8192));
    let response = ask(ingress(&path)).await;
    assert_eq!(response["allowed"], false, "{response:#}");
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.len() <= MAX_REASON_BYTES, "{} bytes", message.len());
    assert!(message.contains("Ingress web/shop"), "{message}");
    assert!(message.ends_with('…'), "{message}");
}

#[tokio::test]
async fn a_review_leaves_the_snapshot_it_judged_as_it_was() {
    let state = state();
    let snapshot = state.snapshots.borrow().clone().unwrap();
    let before = snapshot.store.len();
    let candidate: k8s_openapi::api::networking::v1::Ingress =
        serde_json::from_value(ingress("/shop")).unwrap();
    let verdict = review(
        &snapshot.store,
        &snapshot.config,
        &state.default_certificate,
        None,
        &Candidate::Ingress(Box::new(candidate)),
    )
    .await;
    assert!(verdict.allowed, "{verdict:?}");
    // The candidate went into a clone sharing the snapshot's maps, not into it.
    assert_eq!(snapshot.store.len(), before);
    assert_eq!(snapshot.store.ingresses().count(), 0);
}
