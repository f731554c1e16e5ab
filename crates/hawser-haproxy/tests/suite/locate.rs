//! Finding the real HAProxy and reading its version.

use crate::support;

use hawser_haproxy::{HAPROXY_ENV, HaproxyBinary, Version};

#[test]
fn locate_uses_hawser_haproxy_and_reads_a_supported_version() {
    let expected = support::real_haproxy();
    let located = HaproxyBinary::locate().expect("locate should find HAWSER_HAPROXY");
    assert_eq!(
        located.path().as_os_str(),
        std::env::var_os(HAPROXY_ENV).unwrap()
    );
    assert_eq!(located, expected);
    assert!(
        located.version() >= Version::MINIMUM,
        "{} is older than {}",
        located.version(),
        Version::MINIMUM
    );
}

#[test]
fn version_matches_the_banner() {
    let haproxy = support::real_haproxy();
    let output = std::process::Command::new(haproxy.path())
        .arg("-v")
        .output()
        .unwrap();
    let banner = String::from_utf8(output.stdout).unwrap();
    let banner = banner.lines().next().unwrap();
    let version = haproxy.version();
    assert!(
        banner.contains(&format!("version {}.{}", version.major, version.minor)),
        "{version} not in {banner:?}"
    );
}
