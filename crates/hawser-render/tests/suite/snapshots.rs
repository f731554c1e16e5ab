//! Snapshot tests of whole renders.
//!
//! ```text
//!  tests/inputs/<case>/*.yaml ──load_dir──► Store ──Renderer::render──► Rendered
//!  tests/inputs/<case>/config.yaml (optional) ─┘                          │
//!        tests/snapshots/<case>/{haproxy.cfg, <map>, crt-list.txt, plan, diagnostics, files}.snap
//! ```
//!
//! Certificate bytes are never snapshotted: the default certificate is the
//! fixture made by `tests/inputs/make-certs.sh`, so the output does not depend
//! on the random certificate a `Renderer` generates. Review changed snapshots
//! with `cargo insta review` (or read the `.snap.new` files `INSTA_UPDATE=new`
//! leaves next to them).

use crate::support;

use hawser_render::{FileKind, ROUTES_MAP_PATH, Rendered, validate};

use support::{Case, render_case};

/// Every case directory under `tests/inputs/` and its test.
macro_rules! cases {
    ($($test:ident => $dir:literal),* $(,)?) => {
        const CASES: &[&str] = &[$($dir),*];
        $(
            #[test]
            fn $test() {
                snapshot_case($dir);
            }
        )*
    };
}

cases! {
    basic => "basic",
    path_types => "path-types",
    hosts => "hosts",
    default_backend => "default-backend",
    classes => "classes",
    tls => "tls",
    endpoints => "endpoints",
    annotations => "annotations",
    hostile => "hostile",
    conflicts => "conflicts",
    config => "config",
    gateway => "gateway",
    gateway_streams => "gateway-streams",
    gateway_mirror => "gateway-mirror",
}

fn snapshot_case(name: &str) {
    let case = render_case(name);
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(format!("snapshots/{name}"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_input_file(&case.dir);
    settings.bind(|| {
        let files = &case.rendered.files;
        let text = |path: &str| {
            files
                .text(path)
                .unwrap_or_else(|| panic!("{name}: no text file {path}"))
        };
        insta::assert_snapshot!("haproxy.cfg", text(hawser_render::CONFIG_PATH));
        for (path, file) in files.iter() {
            if file.kind == FileKind::Map {
                let base = path.rsplit('/').next().unwrap_or(path);
                insta::assert_snapshot!(base, text(path));
            }
        }
        insta::assert_snapshot!("crt-list.txt", text(hawser_render::CRT_LIST_PATH));
        insta::assert_yaml_snapshot!("plan", case.rendered.plan);
        insta::assert_snapshot!("diagnostics", diagnostics(&case));
        insta::assert_snapshot!("files", file_list(&case.rendered));
    });
}

/// The render's diagnostics, then any problem loading the manifests, one per line.
fn diagnostics(case: &Case) -> String {
    let mut out = String::new();
    for d in &case.rendered.diagnostics {
        out.push_str(&d.to_string());
        out.push('\n');
    }
    for problem in &case.problems {
        out.push_str("manifest: ");
        out.push_str(problem);
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str("(none)\n");
    }
    out
}

/// Path, kind and mode of every file, never its content.
fn file_list(rendered: &Rendered) -> String {
    rendered
        .files
        .iter()
        .map(|(path, file)| format!("{path} {:?} {:o}\n", file.kind, file.mode()))
        .collect()
}

#[test]
fn every_input_directory_is_a_case() {
    let dirs = support::case_names();
    let mut cases: Vec<&str> = CASES.to_vec();
    cases.sort_unstable();
    assert_eq!(dirs, cases, "add the new input directory to cases!");
}

#[test]
fn hostile_values_inject_nothing() {
    let case = render_case("hostile");
    let files = &case.rendered.files;
    let plan = &case.rendered.plan;

    // Every rejected value carries one of these; none may reach any file.
    let markers = [
        "evil",
        ":4444",
        ":5555",
        ":6666",
        ":7777",
        ":7778",
        ":7779",
        ":7780",
        ":8888",
        ":9999",
        "/etc/passwd",
        "backup",
        "http-request deny if TRUE",
        "other.example.com",
    ];
    for (path, file) in files.iter() {
        if file.is_secret() {
            continue;
        }
        let text = files.text(path).expect("text file");
        for marker in markers {
            assert!(!text.contains(marker), "{path} holds {marker:?}:\n{text}");
        }
        assert!(!text.contains('\r'), "{path} holds a carriage return");
    }

    // haproxy.cfg: exactly the two expected binds; every unindented line is a
    // section header or a comment; no directive carries a quote it did not escape.
    let config = files.text(hawser_render::CONFIG_PATH).expect("haproxy.cfg");
    let binds: Vec<&str> = config
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("bind"))
        .collect();
    assert_eq!(
        binds,
        [
            ":80",
            ":443 ssl crt-list certs/crt-list.txt alpn h2,http/1.1"
        ]
        .map(|rest| format!("bind {rest}")),
        "bind lines"
    );
    for line in config.lines() {
        let section = ["global", "defaults", "frontend ", "backend ", "listen "]
            .iter()
            .any(|s| line.starts_with(s));
        assert!(
            line.is_empty() || line.starts_with(' ') || line.starts_with('#') || section,
            "unexpected top-level line {line:?}"
        );
    }
    let backend_names: Vec<&str> = plan.backends.iter().map(|b| b.name.as_str()).collect();
    for line in config.lines().filter(|l| l.starts_with("backend ")) {
        let name = &line["backend ".len()..];
        assert!(
            backend_names.contains(&name)
                || [
                    hawser_render::NOT_FOUND_BACKEND,
                    hawser_render::features::LIMITS_TABLE,
                    hawser_plan::ROUTES_TABLE,
                ]
                .contains(&name),
            "backend {name:?} is not in the plan"
        );
    }
    // Servers come from the plan only, and only the good endpoint is one.
    let servers: Vec<&str> = config
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("server "))
        .collect();
    assert_eq!(
        servers,
        ["server ep_10.8.0.1_8080 10.8.0.1:8080 weight 1"],
        "server lines"
    );
    for backend in &plan.backends {
        assert_eq!(
            backend.servers.is_empty(),
            backend.name != "be_hostile_web_80",
            "{}: only the good Service has servers",
            backend.name
        );
        assert!(
            ["roundrobin"].contains(&backend.balance.as_str()),
            "{}",
            backend.balance
        );
        assert_eq!(backend.timeout_server, None, "{}", backend.name);
    }

    // Every map: one line per entry, no control character anywhere.
    for map in &plan.maps {
        let text = files.text(&map.path).expect("map file");
        assert_eq!(text.lines().count(), map.entries.len(), "{}", map.path);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{}",
            map.path
        );
    }
    // The routes map: two fields per line, a valid key, a backend of the
    // plan (and the feature set of the good Ingress after `@`).
    for map in plan.maps.iter().filter(|m| m.path == ROUTES_MAP_PATH) {
        let text = files.text(&map.path).expect("map file");
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 2, "{}: {line:?}", map.path);
            assert_eq!(fields.join(" "), line, "{}: odd spacing", map.path);
            let key = fields[0];
            let (host, path) = key.split_at(key.find('/').expect("a path in the key"));
            let path = path
                .strip_suffix(hawser_render::ROUTE_KEY_END)
                .unwrap_or(path);
            assert_eq!(host, "good.example.com", "{}: {line:?}", map.path);
            assert_eq!(validate::path(path), Ok(()), "{}: {line:?}", map.path);
            let (route, owner) = fields[1].split_once(';').expect("the route's Ingress");
            assert_eq!(owner, "Ingress/hostile/good", "{}: {line:?}", map.path);
            let (backend, features) = route.split_once('@').unwrap_or((route, ""));
            assert!(backend_names.contains(&backend), "{}: {line:?}", map.path);
            assert!(
                ["", "hostile/good", "hostile/good:tls"].contains(&features),
                "{}: {line:?}",
                map.path
            );
        }
    }

    // crt-list: only the default certificate (every Secret is bad), no SNI junk.
    let crt_list = files.text(hawser_render::CRT_LIST_PATH).expect("crt-list");
    assert_eq!(crt_list, "certs/default.pem\n");
    let certificates: Vec<&str> = plan.certificates.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(certificates, [hawser_render::DEFAULT_CERT_PATH]);

    // Every hostile Ingress, Service and Secret is named in a rejection.
    let rejected: Vec<String> = case
        .rendered
        .diagnostics
        .iter()
        .filter(|d| d.severity == hawser_render::Severity::Rejected)
        .map(|d| d.object.to_string())
        .collect();
    for object in [
        "Ingress hostile/host-newline",
        "Ingress hostile/host-space",
        "Ingress hostile/host-hash",
        "Ingress hostile/host-quote",
        "Ingress hostile/path-newline",
        "Ingress hostile/path-space",
        "Ingress hostile/path-hash",
        "Ingress hostile/path-quote",
        "Ingress hostile/tls-host-newline",
        "Ingress hostile/tls-host-space",
        "Ingress hostile/tls-secret-newline",
        "Ingress hostile/tls-secret-space",
        "Ingress hostile/tls-secret-hash",
        "Ingress hostile/tls-secret-quote",
        "Ingress hostile/backend-newline",
        "Ingress hostile/backend-port-name",
        "Ingress hostile/default-backend-newline",
        "Ingress evil\\nbind :3333/tls-only", // names print with control characters escaped
        "Service hostile/balance-newline",
        "Service hostile/balance-quote",
        "Service hostile/timeout-hash",
        "Service hostile/timeout-space",
        "Service hostile/unknown-annotation",
        "Service hostile/external-newline",
        "Service hostile/external-space",
        "Secret hostile/garbage-tls",
        "Secret hostile/invalid-tls",
        "Secret hostile/mismatched-tls",
    ] {
        assert!(
            rejected.iter().any(|r| r == object),
            "{object} is not rejected: {rejected:#?}"
        );
    }
}
