//! Loading real directories (tempfile) of manifests.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use hawser_model::{IngressBackend, Kind, ObjectKey, ObjectRef, ServicePortRef};
use tempfile::TempDir;

use super::*;

/// Writes `files` (relative path, text) under a fresh directory and loads it.
fn load(files: &[(&str, &str)]) -> (TempDir, ManifestSet) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    let set = load_dir(dir.path()).unwrap();
    (dir, set)
}

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Problems as displayed, with paths relative to the loaded directory.
fn problems(dir: &TempDir, set: &ManifestSet) -> Vec<String> {
    set.problems
        .iter()
        .map(|p| {
            let file = p.file.strip_prefix(dir.path()).unwrap().to_path_buf();
            Problem { file, ..p.clone() }.to_string()
        })
        .collect()
}

fn key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(namespace, name)
}

const SERVICE: &str = "\
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: app
spec:
  ports:
  - name: http
    port: 80
    targetPort: 8080
";

const INGRESS: &str = "\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: app
spec:
  ingressClassName: hawser
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              name: http
";

#[test]
fn a_multi_document_file_loads_every_document() {
    let file = format!(
        "{SERVICE}---\n{INGRESS}---\n# just a comment\n---\n{}",
        "\
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: hawser
spec:
  controller: hawser.dev/ingress-controller
"
    );
    let (dir, set) = load(&[("app.yaml", &file)]);
    assert_eq!(problems(&dir, &set), Vec::<String>::new());
    assert_eq!((set.files, set.ignored, set.store.len()), (1, 0, 3));
    let service = set.store.service(&key("app", "web")).unwrap();
    assert_eq!(
        service.ports[0].target_port,
        Some(ServicePortRef::Number(8080))
    );
    let ingress = set.store.ingresses().next().unwrap();
    assert_eq!(ingress.requested_class(), Some("hawser"));
    assert_eq!(
        ingress.rules[0].paths[0].backend,
        IngressBackend::Service {
            name: "web".to_string(),
            port: ServicePortRef::Name("http".to_string()),
        }
    );
    let class = set.store.ingress_classes().next().unwrap();
    assert_eq!(class.controller, "hawser.dev/ingress-controller");
}

#[test]
fn nested_directories_are_walked_and_other_files_skipped() {
    let (dir, set) = load(&[
        ("a/b/c/service.yml", SERVICE),
        (
            "ingress.JSON",
            r#"{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
  "metadata": {"name": "api"}, "spec": {"defaultBackend":
    {"service": {"name": "api", "port": {"number": 80}}}}}"#,
        ),
        ("README.md", "not: [yaml"),
        ("notes.txt", "kind: ["),
        // Hidden entries: editor leftovers and a ConfigMap volume's `..data`.
        (".#draft.yaml", "kind: ["),
        ("..data/service.yaml", SERVICE),
    ]);
    assert_eq!(problems(&dir, &set), Vec::<String>::new());
    assert_eq!(set.files, 2);
    assert!(set.store.service(&key("app", "web")).is_some());
    assert_eq!(
        set.store.ingresses().next().unwrap().key,
        key("default", "api")
    );
}

#[test]
fn unknown_kinds_are_ignored_and_counted() {
    let file = "\
apiVersion: v1
kind: ServiceAccount
metadata: {name: settings}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: extensions/v1beta1
kind: Ingress
metadata: {name: old}
";
    let (dir, set) = load(&[("other.yaml", file)]);
    assert_eq!(problems(&dir, &set), Vec::<String>::new());
    assert_eq!((set.ignored, set.store.len()), (3, 0));
}

#[test]
fn malformed_yaml_is_reported_at_its_line_and_the_rest_still_loads() {
    let file = format!(
        "{SERVICE}---
apiVersion: v1
kind: Service
metadata:
  name: broken
    namespace: app
---
{INGRESS}"
    );
    let (dir, set) = load(&[("a.yaml", &file), ("b.yaml", "kind: [unclosed\n")]);
    let line = SERVICE.lines().count() + 6;
    let found = problems(&dir, &set);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with(&format!("a.yaml:{line}: malformed YAML: ")),
        "{found:?}"
    );
    assert!(found[1].starts_with("b.yaml:"), "{found:?}");
    assert!(
        set.problems
            .iter()
            .all(|p| p.kind == ProblemKind::Malformed)
    );
    // The documents before and after the broken one are loaded.
    assert!(set.store.service(&key("app", "web")).is_some());
    assert_eq!(set.store.ingresses().count(), 1);
}

#[test]
fn a_field_of_the_wrong_type_is_reported_with_its_line_and_object() {
    let file = format!(
        "{INGRESS}---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  ports:
  - port: \"abc\"
"
    );
    let (dir, set) = load(&[("app.yaml", &file)]);
    let line = INGRESS.lines().count() + 8;
    assert_eq!(
        problems(&dir, &set),
        vec![format!(
            "app.yaml:{line}: Service default/api: malformed manifest: invalid i32"
        )]
    );
    assert_eq!(set.store.len(), 1);
}

#[test]
fn a_wrong_shape_or_a_missing_path_type_is_reported() {
    // k8s-openapi reads missing required fields as empty values, so a missing
    // pathType is found by the conversion, not by the parser.
    let file = format!(
        "\
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: app}}
spec:
  ports:
    port: 80
---
{}",
        INGRESS.replace("        pathType: Prefix\n", "")
    );
    let (dir, set) = load(&[("app.yaml", &file)]);
    let found = problems(&dir, &set);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("app.yaml:6: Service app/web: malformed manifest: "),
        "{found:?}"
    );
    assert_eq!(
        found[1],
        "app.yaml:8: Ingress app/web: a path has no pathType"
    );
}

#[test]
fn a_missing_name_or_type_meta_is_reported() {
    let file = "\
apiVersion: v1
kind: Service
metadata:
  namespace: app
---
kind: Service
metadata: {name: web}
---
just a string
";
    let (dir, set) = load(&[("app.yaml", file)]);
    let found = problems(&dir, &set);
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(found[0], "app.yaml:1: Service has no metadata.name");
    assert_eq!(found[1], "app.yaml:6: document has no apiVersion");
    assert!(
        found[2].starts_with("app.yaml:9: malformed YAML: "),
        "{found:?}"
    );
    assert_eq!(set.problems[0].kind, ProblemKind::Invalid);
    assert_eq!(set.problems[1].kind, ProblemKind::Malformed);
}

#[test]
fn a_conversion_error_names_the_object_and_its_document() {
    let file = format!("{SERVICE}---\n{}", INGRESS.replace("Prefix", "Foo"));
    let (dir, set) = load(&[("examples/app.yaml", &file)]);
    let line = SERVICE.lines().count() + 2;
    assert_eq!(
        problems(&dir, &set),
        vec![format!(
            "examples/app.yaml:{line}: Ingress app/web: \
             pathType \"Foo\" is not Exact, Prefix or ImplementationSpecific"
        )]
    );
    assert_eq!(set.problems[0].kind, ProblemKind::Invalid);
}

#[test]
fn duplicates_keep_the_first_in_sorted_order() {
    let renamed = SERVICE.replace("80\n", "81\n");
    let (dir, set) = load(&[
        ("b.yaml", &format!("# a comment\n{renamed}")),
        ("a/service.yaml", SERVICE),
    ]);
    assert_eq!(
        problems(&dir, &set),
        vec![format!(
            "b.yaml:2: Service app/web: defined again; the first definition, at {}:1, is kept",
            dir.path().join("a/service.yaml").display()
        )]
    );
    assert_eq!(set.problems[0].kind, ProblemKind::Duplicate);
    let service = set.store.service(&key("app", "web")).unwrap();
    assert_eq!(service.ports[0].port, 80);
}

#[test]
fn list_items_are_read_one_by_one() {
    let file = "\
apiVersion: v1
kind: List
metadata: {resourceVersion: \"\"}
items:
- apiVersion: v1
  kind: Service
  metadata: {name: one}
- apiVersion: v1
  kind: ServiceAccount
  metadata: {name: settings}
- apiVersion: v1
  kind: Service
  metadata: {name: two}
  spec:
    ports:
    - port: x
- {apiVersion: v1, kind: Service, metadata: {name: three}}
- apiVersion: v1
  kind: Service
  metadata: {name: one}
";
    let (dir, set) = load(&[("list.yaml", file)]);
    assert_eq!(
        problems(&dir, &set),
        vec![
            "list.yaml:16: Service default/two: malformed manifest: invalid i32".to_string(),
            format!(
                "list.yaml:18: Service default/one: defined again; \
                 the first definition, at {}:5, is kept",
                dir.path().join("list.yaml").display()
            ),
        ]
    );
    assert_eq!(set.ignored, 1);
    let names: Vec<_> = set.store.services().map(|s| s.key.name.as_str()).collect();
    assert_eq!(names, ["one", "three"]);
}

#[test]
fn a_json_list_from_kubectl_loads() {
    let file = r#"{
    "apiVersion": "v1",
    "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "app"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls", "namespace": "app"}}
    ],
    "kind": "List"
}
"#;
    let (dir, set) = load(&[("all.json", file)]);
    assert_eq!(problems(&dir, &set), Vec::<String>::new());
    assert_eq!(set.store.len(), 2);
}

#[test]
fn secrets_merge_data_and_string_data() {
    let file = "\
apiVersion: v1
kind: Secret
type: kubernetes.io/tls
metadata: {name: tls, namespace: app}
data:
  tls.crt: Y2VydA==
  tls.key: b2xk
stringData:
  tls.key: key
";
    let (dir, set) = load(&[("secret.yaml", file)]);
    assert_eq!(problems(&dir, &set), Vec::<String>::new());
    let secret = set.store.secret(&key("app", "tls")).unwrap();
    assert_eq!(secret.secret_type, "kubernetes.io/tls");
    assert_eq!(secret.tls_crt.as_deref(), Some(&b"cert"[..]));
    assert_eq!(secret.tls_key.as_deref(), Some(&b"key"[..]));
}

#[test]
fn bad_base64_in_a_secret_is_reported_with_its_line() {
    let file = "\
apiVersion: v1
kind: Secret
metadata: {name: tls}
data:
  tls.crt: '!!!'
";
    let (dir, set) = load(&[("secret.yaml", file)]);
    let found = problems(&dir, &set);
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("secret.yaml:5: Secret default/tls: malformed manifest"));
}

#[test]
fn endpoint_slices_are_found_by_their_service() {
    let file = "\
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abcde
  namespace: app
  labels:
    kubernetes.io/service-name: web
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:
- addresses: [10.0.0.1]
  conditions: {ready: true}
- addresses: [10.0.0.2]
  conditions: {ready: false}
";
    let (dir, set) = load(&[("slice.yaml", file), ("service.yaml", SERVICE)]);
    assert_eq!(problems(&dir, &set), Vec::<String>::new());
    let slices: Vec<_> = set.store.endpoint_slices_for(&key("app", "web")).collect();
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0].ports[0].port, 8080);
    let ready: Vec<_> = slices[0].endpoints.iter().map(|e| e.ready).collect();
    assert_eq!(ready, [true, false]);
}

#[test]
fn the_namespace_defaults_to_default() {
    let file = "\
apiVersion: v1
kind: Service
metadata: {name: web}
---
apiVersion: v1
kind: Secret
metadata: {name: tls, namespace: \"\"}
";
    let (dir, set) = load(&[("app.yaml", file)]);
    assert_eq!(problems(&dir, &set), Vec::<String>::new());
    assert!(set.store.service(&key("default", "web")).is_some());
    assert!(set.store.secret(&key("default", "tls")).is_some());
}

#[test]
fn a_file_that_is_not_utf8_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("bad.yaml"), b"a: 1\nb: \xff\n").unwrap();
    write(dir.path(), "good.yaml", SERVICE);
    let set = load_dir(dir.path()).unwrap();
    let found = problems(&dir, &set);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].starts_with("bad.yaml:2: file is not UTF-8"),
        "{found:?}"
    );
    assert_eq!(set.problems[0].kind, ProblemKind::Unreadable);
    assert_eq!((set.files, set.store.len()), (1, 1));
}

#[cfg(unix)]
#[test]
fn symlinks_are_followed_but_loops_are_not() {
    let (dir, _) = load(&[("real/service.yaml", SERVICE)]);
    std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("real/again")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("real/service.yaml"),
        dir.path().join("link.yaml"),
    )
    .unwrap();
    let set = load_dir(dir.path()).unwrap();
    let kinds: Vec<_> = set.problems.iter().map(|p| p.kind).collect();
    // `link.yaml` is read first, then the loop is reported and
    // `real/service.yaml` is a duplicate of `link.yaml`.
    assert_eq!(kinds, [ProblemKind::Unreadable, ProblemKind::Duplicate]);
    assert!(
        set.problems[0].message.contains("loop"),
        "{:?}",
        set.problems
    );
    assert_eq!(set.files, 2);
}

#[test]
fn only_an_unreadable_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = load_dir(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(missing, ManifestError::Read { .. }));
    assert!(
        missing
            .to_string()
            .starts_with("failed to read manifests directory ")
    );

    write(dir.path(), "file.yaml", SERVICE);
    let file = load_dir(&dir.path().join("file.yaml")).unwrap_err();
    assert!(matches!(file, ManifestError::NotADirectory { .. }));

    assert_eq!(load_dir(dir.path()).unwrap().files, 1);
}

#[test]
fn problems_display_what_is_known() {
    let problem = Problem {
        file: "bad.yaml".into(),
        line: None,
        object: Some(ObjectRef::new(
            Kind::IngressClass,
            ObjectKey::cluster("hawser"),
        )),
        kind: ProblemKind::Invalid,
        message: "broken".to_string(),
    };
    assert_eq!(problem.to_string(), "bad.yaml: IngressClass hawser: broken");
    assert_eq!(ProblemKind::Duplicate.to_string(), "duplicate");
}

#[test]
fn gateway_api_kinds_and_namespaces_load() {
    let file = "\
apiVersion: v1
kind: Namespace
metadata: {name: app, labels: {team: a}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: hawser}
spec: {controllerName: hawser.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: hawser
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  rules:
  - backendRefs: [{name: web, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: app}
spec:
  rules:
  - backendRefs: [{name: grpc, port: 9000}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: tls, namespace: app}
spec:
  hostnames: [tls.example.com]
  rules:
  - backendRefs: [{name: tls, port: 443}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: db, namespace: app}
spec:
  rules:
  - backendRefs: [{name: db, port: 5432}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-infra, namespace: app}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: infra}]
  to: [{group: \"\", kind: Secret}]
";
    let (dir, set) = load(&[("gateway.yaml", file)]);
    assert_eq!(problems(&dir, &set), Vec::<String>::new());
    let store = &set.store;
    assert_eq!(store.len(), 8);
    assert!(store.namespace("app").is_some());
    assert!(store.gateway_class("hawser").is_some());
    assert!(store.gateway(&key("infra", "gw")).is_some());
    assert_eq!(store.http_routes().count(), 1);
    assert_eq!(store.grpc_routes().count(), 1);
    assert_eq!(store.tls_routes().count(), 1);
    assert_eq!(store.tcp_routes().count(), 1);
    assert_eq!(store.reference_grants_in("app").count(), 1);
}

#[test]
fn a_bad_gateway_api_object_is_reported_by_name() {
    let file = "\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: app}
spec:
  rules:
  - timeouts: {request: soon}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: hawser}
spec: {}
";
    let (_dir, set) = load(&[("bad.yaml", file)]);
    let objects: Vec<_> = set.problems.iter().map(|p| p.object.clone()).collect();
    assert_eq!(
        objects,
        [
            Some(ObjectRef::new(Kind::HttpRoute, key("app", "web"))),
            Some(ObjectRef::new(
                Kind::GatewayClass,
                ObjectKey::cluster("hawser")
            )),
        ]
    );
}

/// Sets a file's modification time `ago` in the past, as a file written
/// long before the read is.
fn age(dir: &Path, path: &str, ago: Duration) {
    let file = fs::File::options()
        .write(true)
        .open(dir.join(path))
        .unwrap();
    file.set_modified(SystemTime::now() - ago).unwrap();
}

const OLD: Duration = Duration::from_secs(60);

#[test]
fn a_reader_parses_only_the_files_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "service.yaml", SERVICE);
    write(dir.path(), "ingress.yaml", INGRESS);
    age(dir.path(), "service.yaml", OLD);
    age(dir.path(), "ingress.yaml", OLD);
    let mut reader = ManifestReader::default();
    let first = reader.read(dir.path()).unwrap();
    assert_eq!((first.files, first.parsed, first.store.len()), (2, 2, 2));

    let again = reader.read(dir.path()).unwrap();
    assert_eq!((again.files, again.parsed), (2, 0));
    assert_eq!(again.store.len(), 2, "the unchanged files' objects");
    assert!(again.store.service(&key("app", "web")).is_some());

    write(
        dir.path(),
        "ingress.yaml",
        &INGRESS.replace("web.example.com", "new.example.com"),
    );
    age(dir.path(), "ingress.yaml", OLD);
    let changed = reader.read(dir.path()).unwrap();
    assert_eq!((changed.files, changed.parsed), (2, 1));
    let ingress = changed.store.ingresses().next().unwrap();
    assert_eq!(ingress.rules[0].host.as_deref(), Some("new.example.com"));
    assert!(changed.store.service(&key("app", "web")).is_some());

    fs::remove_file(dir.path().join("service.yaml")).unwrap();
    let removed = reader.read(dir.path()).unwrap();
    assert_eq!((removed.files, removed.parsed), (1, 0));
    assert!(removed.store.service(&key("app", "web")).is_none());
}

#[test]
fn a_rewrite_that_keeps_size_and_modification_time_is_still_read() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ingress.yaml", INGRESS);
    age(dir.path(), "ingress.yaml", OLD);
    let mut reader = ManifestReader::default();
    reader.read(dir.path()).unwrap();

    // Same length, same modification time: only the change time moves.
    let modified = fs::metadata(dir.path().join("ingress.yaml"))
        .unwrap()
        .modified()
        .unwrap();
    write(
        dir.path(),
        "ingress.yaml",
        &INGRESS.replace("web.example.com", "new.example.com"),
    );
    fs::File::options()
        .write(true)
        .open(dir.path().join("ingress.yaml"))
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let set = reader.read(dir.path()).unwrap();
    assert_eq!(set.parsed, 1);
    let ingress = set.store.ingresses().next().unwrap();
    assert_eq!(ingress.rules[0].host.as_deref(), Some("new.example.com"));
}

#[test]
fn a_file_written_just_before_a_read_is_parsed_again_only_if_its_content_changed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ingress.yaml", INGRESS);
    let mut reader = ManifestReader::default();
    reader.read(dir.path()).unwrap();
    // Its times may not show a second write within the same clock tick, so
    // it is read again; the same content is not parsed again.
    assert_eq!(reader.read(dir.path()).unwrap().parsed, 0);
    write(
        dir.path(),
        "ingress.yaml",
        &INGRESS.replace("web.example.com", "new.example.com"),
    );
    let set = reader.read(dir.path()).unwrap();
    assert_eq!(set.parsed, 1);
    let ingress = set.store.ingresses().next().unwrap();
    assert_eq!(ingress.rules[0].host.as_deref(), Some("new.example.com"));
}

#[test]
fn a_file_rewritten_with_the_same_content_is_not_parsed_again() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ingress.yaml", INGRESS);
    age(dir.path(), "ingress.yaml", OLD);
    let mut reader = ManifestReader::default();
    reader.read(dir.path()).unwrap();
    write(dir.path(), "ingress.yaml", INGRESS);
    let set = reader.read(dir.path()).unwrap();
    assert_eq!((set.files, set.parsed, set.store.len()), (1, 0, 1));
}

#[test]
fn a_reader_reports_a_bad_file_on_every_read_until_it_is_fixed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "bad.yaml", "kind: [unclosed\n");
    write(dir.path(), "ingress.yaml", INGRESS);
    age(dir.path(), "bad.yaml", OLD);
    age(dir.path(), "ingress.yaml", OLD);
    let mut reader = ManifestReader::default();
    let first = reader.read(dir.path()).unwrap();
    let again = reader.read(dir.path()).unwrap();
    assert_eq!(again.parsed, 0);
    assert_eq!(problems(&dir, &again), problems(&dir, &first));
    assert_eq!(again.problems.len(), 1);
    assert_eq!(again.store.len(), 1);
}
