//! `hawser status` as a user runs it: the Gateway API status of a manifests
//! directory, in text and as the JSON status stanzas (fixture `status_cli/`:
//! an accepted route, two unattached ones, two with unresolved backends, an
//! Ingress served and one ignored; a malformed manifest; an invalid config).

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::{Finished, fixture_dir, hawser_command, run_to_end};

/// sysexits' EX_USAGE: what hawser exits with on an invalid configuration.
const EXIT_USAGE: i32 = 64;

fn status(manifests: &Path, extra: &[&str]) -> Finished {
    let mut command = hawser_command(["status"]);
    command.arg("--manifests").arg(manifests).args(extra);
    run_to_end(&mut command)
}

fn routes() -> std::path::PathBuf {
    fixture_dir("status_cli").join("routes")
}

/// The text block of one object: its header line and the indented lines
/// under it.
fn block(text: &str, header: &str) -> String {
    let mut lines = text.lines().skip_while(|line| *line != header);
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no block {header:?} in:\n{text}"));
    let body: Vec<&str> = lines.take_while(|line| line.starts_with(' ')).collect();
    format!("{first}\n{}\n", body.join("\n"))
}

#[test]
fn an_accepted_route_is_attached_with_its_references_resolved() {
    let run = status(&routes(), &[]);
    assert!(run.status.success(), "{}", run.describe());
    let web = block(&run.stdout, "HTTPRoute app/web");
    assert!(
        web.contains("parent Gateway app/edge sectionName http: attached"),
        "{web}"
    );
    assert!(web.contains("Accepted      True   Accepted"), "{web}");
    assert!(web.contains("ResolvedRefs  True   ResolvedRefs"), "{web}");
    let gateway = block(&run.stdout, "Gateway app/edge");
    assert!(
        gateway.contains("listener http: 3 attached routes"),
        "three routes attach (web and the two with unresolved backends):\n{gateway}"
    );
    assert!(
        run.stdout.contains("GatewayClass hawser\n"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("GatewayClass elsewhere\n"),
        "another controller's class has no status of ours:\n{}",
        run.stdout
    );
}

#[test]
fn an_unattached_route_says_why_with_the_specs_reason() {
    let run = status(&routes(), &[]);
    let foreign = block(&run.stdout, "HTTPRoute other/foreign");
    assert!(
        foreign.contains("NOT attached (NotAllowedByListeners)"),
        "{foreign}"
    );
    assert!(
        foreign.contains("no listener allows HTTPRoutes from namespace \"other\""),
        "{foreign}"
    );
    assert!(
        foreign
            .contains("listener http allows routes from namespaces: Same (only namespace \"app\")"),
        "the listener's side is shown:\n{foreign}"
    );
    let wrong = block(&run.stdout, "HTTPRoute app/wrong-host");
    assert!(
        wrong.contains("NOT attached (NoMatchingListenerHostname)"),
        "{wrong}"
    );
    assert!(
        wrong.contains("- route hostnames: www.example.org")
            && wrong.contains("- listener http hostname: *.example.com"),
        "both hostnames are shown:\n{wrong}"
    );
}

#[test]
fn an_unresolved_backend_is_named_with_its_reason() {
    let run = status(&routes(), &[]);
    let missing = block(&run.stdout, "HTTPRoute app/missing-backend");
    assert!(
        missing.contains("ResolvedRefs  False  BackendNotFound"),
        "{missing}"
    );
    assert!(
        missing.contains("Service app/nosuch does not exist"),
        "{missing}"
    );
    let cross = block(&run.stdout, "HTTPRoute app/cross");
    assert!(
        cross.contains("ResolvedRefs  False  RefNotPermitted"),
        "{cross}"
    );
    assert!(
        cross.contains("no ReferenceGrant in namespace \"other\""),
        "{cross}"
    );
}

#[test]
fn ingresses_are_listed_as_served_or_ignored() {
    let run = status(&routes(), &[]);
    assert!(
        run.stdout.contains("  served app/classic\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("  ignored app/theirs: IngressClass \"nginx\""),
        "{}",
        run.stdout
    );
}

#[test]
fn json_output_holds_the_status_stanzas() {
    let run = status(&routes(), &["--output", "json"]);
    assert!(run.status.success(), "{}", run.describe());
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let items = report["items"].as_array().unwrap();
    let find = |kind: &str, name: &str| {
        items
            .iter()
            .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name} in {report:#}"))
    };
    let class = find("GatewayClass", "hawser");
    assert_eq!(class["status"]["conditions"][0]["type"], "Accepted");
    assert_eq!(class["status"]["conditions"][0]["status"], "True");

    let gateway = find("Gateway", "edge");
    let listener = &gateway["status"]["listeners"][0];
    assert_eq!(listener["name"], "http");
    assert_eq!(listener["attachedRoutes"], 3);
    assert_eq!(listener["supportedKinds"][0]["kind"], "HTTPRoute");

    let foreign = find("HTTPRoute", "foreign");
    assert_eq!(foreign["metadata"]["namespace"], "other");
    let parent = &foreign["status"]["parents"][0];
    assert_eq!(parent["controllerName"], "hawser.dev/gateway-controller");
    assert_eq!(parent["parentRef"]["name"], "edge");
    assert_eq!(parent["parentRef"]["namespace"], "app");
    let accepted = parent["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Accepted")
        .unwrap();
    assert_eq!(accepted["status"], "False");
    assert_eq!(accepted["reason"], "NotAllowedByListeners");

    let web = find("HTTPRoute", "web");
    assert_eq!(
        web["status"]["parents"][0]["parentRef"]["sectionName"],
        "http"
    );

    let ingresses = report["ingresses"].as_array().unwrap();
    assert!(
        ingresses
            .iter()
            .any(|i| i["name"] == "theirs" && i["state"] == "ignored"),
        "{report:#}"
    );
}

#[test]
fn a_malformed_manifest_is_reported_with_its_file_and_line() {
    let run = status(&fixture_dir("status_cli").join("malformed"), &[]);
    assert!(run.status.success(), "{}", run.describe());
    assert!(
        run.stderr
            .contains("gateway.yaml:8: Gateway app/edge: malformed manifest"),
        "{}",
        run.describe()
    );
}

#[test]
fn an_invalid_config_exits_with_the_usage_code() {
    let config = fixture_dir("status_cli").join("bad-config.yaml");
    let run = status(&routes(), &["--config", config.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(EXIT_USAGE), "{}", run.describe());
    assert!(run.stderr.contains("noSuchSetting"), "{}", run.describe());
}

#[test]
fn an_unknown_output_format_is_refused() {
    let run = status(&routes(), &["--output", "yaml"]);
    assert_ne!(run.status.code(), Some(0), "{}", run.describe());
}
