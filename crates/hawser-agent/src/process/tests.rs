//! Unit tests of the pure parts; `tests/suite/process.rs` runs the real HAProxy.

use std::{
    ffi::{OsStr, OsString},
    path::Path,
};

use super::{
    HaproxyLayout,
    adopt::parse_pid_file,
    identity::{ProcessIdentity, Signature, parse_stat},
};

fn argv(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn signature() -> Signature<'static> {
    Signature {
        binary_name: OsStr::new("haproxy"),
        config_dir: Path::new("/state/tree/current"),
    }
}

#[test]
fn command_lines_of_masters_workers_and_reexecs_match() {
    let sig = signature();
    let first = [
        "/usr/sbin/haproxy",
        "-W",
        "-S",
        "/state/run/master.sock,mode,600",
        "-C",
        "/state/tree/current",
        "-f",
        "haproxy.cfg",
        "-p",
        "/state/run/haproxy.pid",
    ];
    assert!(sig.matches(&argv(&first)));
    // After a reload the master (and its new worker) carry -sf and -x too.
    let reexec = [
        "/usr/sbin/haproxy",
        "-sf",
        "705",
        "-x",
        "sockpair@4",
        "-W",
        "-S",
        "/state/run/master.sock,mode,600",
        "-C",
        "/state/tree/current",
        "-f",
        "haproxy.cfg",
    ];
    assert!(sig.matches(&argv(&reexec)));
    // Whatever its master socket: one tree, one master.
    assert!(sig.matches(&argv(&[
        "haproxy",
        "-S",
        "/elsewhere/master.sock",
        "-C",
        "/state/tree/current"
    ])));
}

#[test]
fn other_trees_and_programs_do_not_match() {
    let sig = signature();
    let cases: [&[&str]; 6] = [
        &[],
        &["sleep", "-C", "/state/tree/current"],
        &[
            "haproxy",
            "-S",
            "/state/run/master.sock",
            "-C",
            "/state/tree/v1",
        ],
        &["haproxy", "-C", "/state/tree/current/"],
        &["haproxy", "-S", "/state/run/master.sock"],
        // The path in some other position is not our -C.
        &["haproxy", "-f", "/state/tree/current"],
    ];
    for case in cases {
        assert!(!sig.matches(&argv(case)), "{case:?}");
    }
}

#[test]
fn stat_lines_are_read_after_the_last_parenthesis() {
    let line = "4242 (hap (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 2 0 987654 1000 10 \
                18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    let stat = parse_stat(line).unwrap();
    assert_eq!(stat.state, 'S');
    assert_eq!(stat.ppid, 1);
    assert_eq!(stat.pgrp, 4242);
    assert_eq!(stat.start_time, 987_654);
    assert_eq!(parse_stat("4242 (x) S 1"), None);
    assert_eq!(parse_stat("garbage"), None);
}

#[test]
fn pid_files_must_hold_one_positive_pid() {
    assert_eq!(parse_pid_file("1234\n"), Some(1234));
    assert_eq!(parse_pid_file(" 77 "), Some(77));
    for bad in ["", "0", "-1", "12 13", "abc", "99999999999"] {
        assert_eq!(parse_pid_file(bad), None, "{bad:?}");
    }
}

#[test]
fn our_own_pid_and_pid_zero_are_never_an_identity() {
    assert_eq!(ProcessIdentity::of(std::process::id()), None);
    assert_eq!(ProcessIdentity::of(0), None);
    assert_eq!(ProcessIdentity::of(u32::MAX), None);
}

#[test]
fn layouts_become_absolute_without_resolving_links() {
    let layout = HaproxyLayout::new("run", "tree/current")
        .absolute()
        .unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(layout.run_dir, cwd.join("run"));
    assert_eq!(layout.config_dir, cwd.join("tree/current"));
    assert_eq!(layout.master_socket(), cwd.join("run/master.sock"));
    assert_eq!(layout.pid_file(), cwd.join("run/haproxy.pid"));
    let error = HaproxyLayout::new("/tmp/a,b", "/x").absolute().unwrap_err();
    assert_eq!(error.metric_label(), "io");
}
