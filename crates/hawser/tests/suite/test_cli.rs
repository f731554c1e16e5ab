//! `hawser test` as a user runs it: the config's validation tests proved
//! against the real HAProxy, one line per test, exit codes (fixture
//! `test_cli/`: manifests routing two hosts to two Services, and configs
//! whose tests pass, fail, or cannot run).

use crate::support::{Finished, fixture_dir, hawser_command, render, repository_dir, run_to_end};

/// sysexits' EX_USAGE: what hawser exits with on an invalid configuration.
const EXIT_USAGE: i32 = 64;

fn hawser_test(config: &str, selected: &[&str]) -> Finished {
    let fixture = fixture_dir("test_cli");
    let mut command = hawser_command(["test"]);
    command
        .arg("--manifests")
        .arg(fixture.join("manifests"))
        .arg("--config")
        .arg(fixture.join(config));
    for name in selected {
        command.args(["--test", name]);
    }
    run_to_end(&mut command)
}

fn expect_line(run: &Finished, line: &str) {
    assert!(
        run.stdout.lines().any(|l| l == line),
        "expected the line {line:?}\n{}",
        run.describe()
    );
}

#[test]
fn passing_tests_print_pass_lines_and_exit_0() {
    let run = hawser_test("passing.yaml", &[]);
    assert!(run.status.success(), "{}", run.describe());
    for name in ["storefront", "storefront-api", "api-v1", "api-unrouted"] {
        expect_line(&run, &format!("PASS {name}"));
    }
    assert!(
        run.stdout.contains("4 passed, 0 failed (HAProxy "),
        "{}",
        run.describe()
    );
}

#[test]
fn failing_expectations_exit_1_naming_the_test_and_what_came_back() {
    let run = hawser_test("failing.yaml", &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    expect_line(&run, "PASS storefront");
    expect_line(
        &run,
        "FAIL api-goes-to-web: expected status 200 from Service shop/web, got 200 from Service shop/api",
    );
    expect_line(
        &run,
        "FAIL v2-is-routed: expected status 200, got 404 from HAProxy itself (no Service answered)",
    );
    assert!(
        run.stdout.contains("1 passed, 3 failed"),
        "{}",
        run.describe()
    );
}

/// A test whose Service the render rejected says so, and other failing
/// tests do not mention it.
#[test]
fn a_failure_names_the_rejected_object_it_relies_on() {
    let run = hawser_test("failing.yaml", &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    let legacy = run
        .stdout
        .lines()
        .find(|l| l.starts_with("FAIL legacy: "))
        .unwrap_or_else(|| panic!("no FAIL legacy line\n{}", run.describe()));
    assert!(
        legacy.starts_with(
            "FAIL legacy: expected status 200 from Service shop/legacy, got 503 from HAProxy itself (no Service answered); the render rejected Service shop/legacy: annotation hawser.dev/sticky-magic"
        ),
        "{legacy}"
    );
    assert_eq!(
        run.stdout.matches("shop/legacy:").count(),
        1,
        "{}",
        run.describe()
    );
}

#[test]
fn test_selects_tests_by_name() {
    let run = hawser_test("failing.yaml", &["storefront"]);
    assert!(run.status.success(), "{}", run.describe());
    expect_line(&run, "PASS storefront");
    assert!(
        !run.stdout.contains("api-goes-to-web"),
        "{}",
        run.describe()
    );
    assert!(
        run.stdout.contains("1 passed, 0 failed"),
        "{}",
        run.describe()
    );

    let run = hawser_test("failing.yaml", &["v2-is-routed"]);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    assert!(
        run.stdout.contains("0 passed, 1 failed"),
        "{}",
        run.describe()
    );
}

#[test]
fn an_unknown_test_name_exits_64_listing_the_tests() {
    let run = hawser_test("passing.yaml", &["nosuch"]);
    assert_eq!(run.status.code(), Some(EXIT_USAGE), "{}", run.describe());
    assert!(
        run.stderr.contains("\"nosuch\"") && run.stderr.contains("storefront, storefront-api"),
        "{}",
        run.describe()
    );
}

#[test]
fn an_invalid_test_exits_64_naming_it() {
    let run = hawser_test("invalid.yaml", &[]);
    assert_eq!(run.status.code(), Some(EXIT_USAGE), "{}", run.describe());
    assert!(
        run.stderr
            .contains("tests[0] (\"nothing-expected\"): expect"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_config_without_tests_says_so_and_exits_0() {
    let run = hawser_test("no-tests.yaml", &[]);
    assert!(run.status.success(), "{}", run.describe());
    assert!(
        run.stdout.starts_with("no validation tests"),
        "{}",
        run.describe()
    );
}

/// The same file configures the other commands: its tests are checked
/// and otherwise left to `hawser test`.
#[test]
fn render_takes_a_config_with_tests_and_refuses_an_invalid_one() {
    let fixture = fixture_dir("test_cli");
    let work = tempfile::tempdir().expect("temporary directory");
    let run = render(
        &fixture.join("manifests"),
        &work.path().join("out"),
        Some(&fixture.join("failing.yaml")),
    );
    assert!(run.status.success(), "{}", run.describe());

    let run = render(
        &fixture.join("manifests"),
        &work.path().join("other"),
        Some(&fixture.join("invalid.yaml")),
    );
    assert_eq!(run.status.code(), Some(EXIT_USAGE), "{}", run.describe());
    assert!(
        run.stderr.contains("nothing-expected"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_render_haproxy_refuses_exits_1_with_its_message() {
    let run = hawser_test("bad-snippet.yaml", &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    assert!(
        run.stderr
            .contains("HAProxy rejects the rendered configuration")
            && run.stderr.contains("unknown keyword 'nosuchdirective'")
            && run.stderr.contains("(from snippet global-bad)"),
        "{}",
        run.describe()
    );
}

/// The example configuration's tests hold for the demo they describe.
#[test]
fn the_example_config_passes_over_the_demo() {
    let root = repository_dir();
    let mut command = hawser_command(["test"]);
    command
        .arg("--manifests")
        .arg(root.join("examples/demo"))
        .arg("--config")
        .arg(root.join("examples/config/hawser.yaml"));
    let run = run_to_end(&mut command);
    assert!(run.status.success(), "{}", run.describe());
    expect_line(&run, "PASS unknown-host-falls-back");
}
