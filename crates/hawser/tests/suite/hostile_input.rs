//! Hostile input: values in objects that try to smuggle HAProxy directives
//! or map entries are rejected (the whole object, named on stderr), the rest
//! renders and serves; a malformed file is reported with its line and does
//! not stop the others; a hostile Host header cannot forge a route key
//! (fixture `hostile_input/`).

use crate::support;

use std::fs;

use support::{Served, pod};

async fn serve_hostile() -> Served {
    support::serve("hostile_input", &[pod("hostile", "good", "good-0")]).await
}

#[tokio::test]
async fn hostile_objects_are_rejected_and_named() {
    let ingress = serve_hostile().await;
    let stderr = &ingress.render.stderr;
    for object in [
        "Ingress hostile/evil-path",
        "Ingress hostile/evil-host",
        "Ingress hostile/evil-backend",
        "Service hostile/evil-annotation",
        "Ingress hostile/evil-allowlist",
        "Ingress hostile/evil-redirect",
        "Ingress hostile/foreign-auth",
        "Ingress hostile/evil-header",
        "Ingress hostile/evil-rewrite",
        "Ingress hostile/evil-realm",
        "Ingress hostile/evil-auth",
        "Ingress hostile/evil-canary",
        "Ingress hostile/evil-path-rewrite",
    ] {
        assert!(
            stderr.contains(&format!("rejected: {object}: ")),
            "render should reject {object}:\n{stderr}"
        );
    }
    assert!(
        !stderr.contains("rejected: Ingress hostile/good:"),
        "{stderr}"
    );
}

#[tokio::test]
async fn nothing_is_injected_into_the_rendered_files() {
    let ingress = serve_hostile().await;
    let config = ingress.config();
    let binds: Vec<&str> = config
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("bind "))
        .collect();
    assert_eq!(binds.len(), 2, "only the HTTP and HTTPS binds: {binds:?}");
    for smuggled in [
        "bind :1",
        "bind :2",
        "127.0.0.1:1",
        "127.0.0.1:3",
        "127.0.0.1:5",
        "127.0.0.1:6",
        "127.0.0.1:7",
        "127.0.0.1:8",
        "127.0.0.1:9",
        "127.0.0.1:10",
        "if TRUE",
        "timeout server 5s",
        "X-Evil",
    ] {
        assert!(
            !config.contains(smuggled),
            "haproxy.cfg holds {smuggled:?}:\n{config}"
        );
    }
    // The routes map: every line is exactly "<key> <backend>", and only
    // harmless keys made it. The feature maps: keyed by the served Ingresses
    // feature sets only.
    let maps = ingress.out_dir().join("maps");
    for entry in fs::read_dir(&maps).expect("maps directory") {
        let path = entry.expect("map file").path();
        let text = fs::read_to_string(&path).expect("map text");
        assert!(
            !text.contains("X-Evil") && !text.contains('\r'),
            "{}",
            path.display()
        );
        if path.ends_with("live_twins.map") {
            // No user string: which copy of the route map requests read.
            assert_eq!(text, "maps/routes.map maps/routes.map\n");
            continue;
        }
        let routes = path.ends_with("routes.map") || path.ends_with("routes.twin.map");
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if !routes {
                let served = ["hostile/good", "hostile/uses-evil-annotation"];
                assert!(
                    served.iter().any(|s| fields[0].starts_with(s)),
                    "{}: {line:?}",
                    path.display()
                );
                continue;
            }
            assert_eq!(fields.len(), 2, "{}: {line:?}", path.display());
            assert!(
                fields[0].starts_with("good.example.com/")
                    || fields[0].starts_with("evil-annotation.example.com/"),
                "{}: unexpected route {line:?}",
                path.display()
            );
        }
    }
}

#[tokio::test]
async fn good_objects_beside_hostile_ones_are_served() {
    let ingress = serve_hostile().await;
    ingress
        .expect_routed_to("good.example.com", "/", "good")
        .await;
    // Rejected Ingresses route nothing.
    ingress.expect_no_route("evil-path.example.com", "/x").await;
    ingress
        .expect_no_route("evil-backend.example.com", "/")
        .await;
    ingress.expect_no_route("smuggled.example.com", "/").await;
    // The rejected Service keeps a backend, without servers.
    ingress
        .expect_status("evil-annotation.example.com", "/", 503)
        .await;
}

#[tokio::test]
async fn malformed_file_is_reported_with_its_line_and_stops_nothing() {
    let ingress = serve_hostile().await;
    let stderr = &ingress.render.stderr;
    let broken = ingress.manifests.path().join("broken.yaml");
    let expected = format!("manifest problem: {}:8: malformed YAML", broken.display());
    assert!(
        stderr.contains(&expected),
        "render should report {expected:?}:\n{stderr}"
    );
    assert!(
        ingress.render.stdout.contains("1 manifest problems"),
        "{}",
        ingress.render.stdout
    );
    // broken.yaml sorts first; the files after it were read all the same.
    ingress
        .expect_routed_to("good.example.com", "/after/broken", "good")
        .await;
}

#[tokio::test]
async fn host_header_cannot_forge_a_route_key() {
    let ingress = serve_hostile().await;
    // Route keys are "<host><path>": a Host holding a path must not reach
    // the route of good.example.com.
    let response = ingress.get("good.example.com/x", "/").await;
    assert_eq!(response.status, 400, "{:?}", response.text());
    let response = ingress.get("evil-path.example.com/..", "/").await;
    assert_eq!(response.status, 400, "{:?}", response.text());
}
