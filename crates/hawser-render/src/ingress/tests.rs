//! Table-driven tests of [`route_table`]: class selection, map keys, precedence,
//! conflicts, rejection of hostile values, default backend and TLS merging.

use std::collections::BTreeMap;

use hawser_model::{
    INGRESS_CLASS_ANNOTATION, IngressClass, IngressPath, IngressRule, IngressTls, Object,
    ServicePortRef,
};

use super::*;
use crate::report::Diagnostic;

const CONTROLLER: &str = "hawser.dev/ingress-controller";
const HOST: &str = "a.test";

/// An Ingress of class `hawser` in `namespace` with nothing in it yet.
fn ingress(namespace: &str, name: &str) -> Ingress {
    Ingress {
        key: ObjectKey::new(namespace, name),
        created: None,
        class_name: Some("hawser".to_string()),
        annotations: BTreeMap::new(),
        default_backend: None,
        tls: Vec::new(),
        rules: Vec::new(),
    }
}

fn service(name: &str) -> IngressBackend {
    IngressBackend::Service {
        name: name.to_string(),
        port: ServicePortRef::Number(80),
    }
}

fn path(path_type: PathType, path: Option<&str>, backend: &str) -> IngressPath {
    IngressPath {
        path: path.map(str::to_string),
        path_type,
        backend: service(backend),
    }
}

fn rule(host: Option<&str>, paths: Vec<IngressPath>) -> IngressRule {
    IngressRule {
        host: host.map(str::to_string),
        paths,
    }
}

fn created(mut ingress: Ingress, at: &str) -> Ingress {
    ingress.created = Some(at.to_string());
    ingress
}

/// One rule on [`HOST`] with one path.
fn routed(namespace: &str, name: &str, path_type: PathType, p: &str, backend: &str) -> Ingress {
    let mut ing = ingress(namespace, name);
    ing.rules = vec![rule(Some(HOST), vec![path(path_type, Some(p), backend)])];
    ing
}

fn class(name: &str, controller: &str, is_default: bool) -> IngressClass {
    IngressClass {
        name: name.to_string(),
        controller: controller.to_string(),
        is_default,
    }
}

/// A store with our `hawser` class (not default) and these Ingresses.
fn store(ingresses: impl IntoIterator<Item = Ingress>) -> Store {
    let mut store = Store::new();
    store.insert(Object::IngressClass(class("hawser", CONTROLLER, false)));
    for ing in ingresses {
        store.insert(Object::Ingress(ing));
    }
    store
}

fn build(store: &Store) -> (RouteTable, Vec<Diagnostic>) {
    let mut diags = Diagnostics::default();
    let settings = Settings {
        ingress_controller: CONTROLLER.to_string(),
        ..Settings::default()
    };
    let table = route_table(store, &settings, &mut diags);
    (table, diags.finish())
}

/// A map as `key → backend`, for comparing with literals.
fn entries(map: &BTreeMap<String, Target>) -> Vec<(String, String)> {
    map.iter()
        .map(|(k, t)| (k.clone(), t.backend.to_string()))
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn lines(diags: &[Diagnostic]) -> Vec<String> {
    diags.iter().map(ToString::to_string).collect()
}

fn ingress_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(Kind::Ingress, ObjectKey::new(namespace, name))
}

#[test]
fn class_selection() {
    struct Case {
        name: &'static str,
        classes: Vec<IngressClass>,
        class_name: Option<&'static str>,
        annotation: Option<&'static str>,
        ours: bool,
    }
    let ours = || class("hawser", CONTROLLER, false);
    let ours_default = || class("hawser", CONTROLLER, true);
    let other = || class("nginx", "k8s.io/ingress-nginx", false);
    let other_default = || class("nginx", "k8s.io/ingress-nginx", true);
    let cases = [
        Case {
            name: "ingressClassName names our class",
            classes: vec![ours(), other()],
            class_name: Some("hawser"),
            annotation: None,
            ours: true,
        },
        Case {
            name: "ingressClassName names another controller's class",
            classes: vec![ours(), other()],
            class_name: Some("nginx"),
            annotation: None,
            ours: false,
        },
        Case {
            name: "ingressClassName names a class that does not exist",
            classes: vec![ours_default()],
            class_name: Some("missing"),
            annotation: None,
            ours: false,
        },
        Case {
            name: "legacy annotation names our class",
            classes: vec![ours(), other()],
            class_name: None,
            annotation: Some("hawser"),
            ours: true,
        },
        Case {
            name: "legacy annotation names another class",
            classes: vec![ours_default(), other()],
            class_name: None,
            annotation: Some("nginx"),
            ours: false,
        },
        Case {
            name: "ingressClassName wins over the annotation (ours)",
            classes: vec![ours(), other()],
            class_name: Some("hawser"),
            annotation: Some("nginx"),
            ours: true,
        },
        Case {
            name: "ingressClassName wins over the annotation (not ours)",
            classes: vec![ours(), other()],
            class_name: Some("nginx"),
            annotation: Some("hawser"),
            ours: false,
        },
        Case {
            name: "no class, ours is the default",
            classes: vec![ours_default(), other()],
            class_name: None,
            annotation: None,
            ours: true,
        },
        Case {
            name: "no class, no default class",
            classes: vec![ours(), other()],
            class_name: None,
            annotation: None,
            ours: false,
        },
        Case {
            name: "no class, another controller's class is the default",
            classes: vec![ours(), other_default()],
            class_name: None,
            annotation: None,
            ours: false,
        },
        Case {
            name: "no class and no IngressClass at all",
            classes: vec![],
            class_name: None,
            annotation: None,
            ours: false,
        },
    ];
    for case in cases {
        let mut ing = routed("app", "web", PathType::Prefix, "/", "web");
        ing.class_name = case.class_name.map(str::to_string);
        if let Some(value) = case.annotation {
            ing.annotations
                .insert(INGRESS_CLASS_ANNOTATION.to_string(), value.to_string());
        }
        let mut store = Store::new();
        for c in case.classes {
            store.insert(Object::IngressClass(c));
        }
        store.insert(Object::Ingress(ing));
        let (table, diags) = build(&store);
        if case.ours {
            assert_eq!(
                entries(&table.prefix),
                pairs(&[("a.test/", "be_app_web_80")]),
                "{}",
                case.name
            );
            assert!(diags.is_empty(), "{}: {:?}", case.name, lines(&diags));
        } else {
            assert!(table.prefix.is_empty(), "{}", case.name);
            assert!(table.backends.is_empty(), "{}", case.name);
            assert_eq!(diags.len(), 1, "{}: {:?}", case.name, lines(&diags));
            assert_eq!(diags[0].severity, Severity::Ignored, "{}", case.name);
            assert_eq!(diags[0].object, ingress_ref("app", "web"), "{}", case.name);
        }
    }
}

#[test]
fn path_types_make_exact_and_prefix_keys() {
    use PathType::{Exact, ImplementationSpecific as Specific, Prefix};
    // (case, host, pathType, path, exact map keys, prefix map keys)
    type Case = (
        &'static str,
        Option<&'static str>,
        PathType,
        Option<&'static str>,
        &'static [&'static str],
        &'static [&'static str],
    );
    #[rustfmt::skip]
    let cases: &[Case] = &[
        ("Exact is one key", Some(HOST), Exact, Some("/foo"), &["a.test/foo"], &[]),
        ("Exact keeps a trailing slash", Some(HOST), Exact, Some("/foo/"), &["a.test/foo/"], &[]),
        ("Exact /", Some(HOST), Exact, Some("/"), &["a.test/"], &[]),
        ("Prefix matches itself and below it", Some(HOST), Prefix, Some("/foo"), &["a.test/foo"], &["a.test/foo/"]),
        ("Prefix ignores a trailing slash", Some(HOST), Prefix, Some("/foo/"), &["a.test/foo"], &["a.test/foo/"]),
        ("Prefix ignores trailing slashes", Some(HOST), Prefix, Some("/foo///"), &["a.test/foo"], &["a.test/foo/"]),
        ("Prefix nested", Some(HOST), Prefix, Some("/foo/bar/"), &["a.test/foo/bar"], &["a.test/foo/bar/"]),
        ("Prefix / is every path", Some(HOST), Prefix, Some("/"), &[], &["a.test/"]),
        ("Prefix without a path is /", Some(HOST), Prefix, None, &[], &["a.test/"]),
        ("Prefix // is /", Some(HOST), Prefix, Some("//"), &[], &["a.test/"]),
        ("ImplementationSpecific is Prefix", Some(HOST), Specific, Some("/foo/"), &["a.test/foo"], &["a.test/foo/"]),
        ("ImplementationSpecific, no path", Some(HOST), Specific, None, &[], &["a.test/"]),
        ("no host: the path alone", None, Prefix, Some("/foo"), &["/foo"], &["/foo/"]),
        ("no host, Exact", None, Exact, Some("/foo"), &["/foo"], &[]),
        ("no host, /", None, Prefix, Some("/"), &[], &["/"]),
        ("wildcard host", Some("*.a.test"), Prefix, Some("/x"), &["*.a.test/x"], &["*.a.test/x/"]),
        ("percent-escapes are kept", Some(HOST), Exact, Some("/a%20b"), &["a.test/a%20b"], &[]),
    ];
    for (name, host, path_type, p, exact, prefix) in cases {
        let mut ing = ingress("app", "web");
        ing.rules = vec![rule(*host, vec![path(*path_type, *p, "web")])];
        let (table, diags) = build(&store([ing]));
        assert!(diags.is_empty(), "{name}: {:?}", lines(&diags));
        let keys = |m: &BTreeMap<String, Target>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&table.exact), exact.to_vec(), "{name}: exact map");
        assert_eq!(keys(&table.prefix), prefix.to_vec(), "{name}: prefix map");
        for target in table.exact.values().chain(table.prefix.values()) {
            assert_eq!(&*target.backend, "be_app_web_80", "{name}");
            assert_eq!(*target.owner, ingress_ref("app", "web"), "{name}");
        }
        for target in table.exact.values() {
            assert_eq!(target.exact_type, *path_type == Exact, "{name}: exact_type");
        }
    }
}

#[test]
fn exact_outranks_prefix_at_the_same_path() {
    use PathType::{Exact, Prefix};
    // (case, Ingresses, expected exact map, expected prefix map)
    let one = |paths: Vec<IngressPath>| {
        let mut ing = ingress("app", "one");
        ing.rules = vec![rule(Some(HOST), paths)];
        vec![ing]
    };
    let cases = [
        (
            "one Ingress, Prefix then Exact",
            one(vec![
                path(Prefix, Some("/foo"), "pre"),
                path(Exact, Some("/foo"), "ex"),
            ]),
        ),
        (
            "one Ingress, Exact then Prefix",
            one(vec![
                path(Exact, Some("/foo"), "ex"),
                path(Prefix, Some("/foo/"), "pre"),
            ]),
        ),
        (
            "older Ingress Prefix, newer Ingress Exact",
            vec![
                created(
                    routed("app", "old", Prefix, "/foo", "pre"),
                    "2024-01-01T00:00:00Z",
                ),
                created(
                    routed("app", "new", Exact, "/foo", "ex"),
                    "2024-06-01T00:00:00Z",
                ),
            ],
        ),
        (
            "older Ingress Exact, newer Ingress Prefix",
            vec![
                created(
                    routed("app", "new", Prefix, "/foo", "pre"),
                    "2024-06-01T00:00:00Z",
                ),
                created(
                    routed("app", "old", Exact, "/foo", "ex"),
                    "2024-01-01T00:00:00Z",
                ),
            ],
        ),
    ];
    for (name, ingresses) in cases {
        let (table, diags) = build(&store(ingresses));
        // Exact /foo wins /foo itself; the prefix still serves /foo/...; nobody lost a claim.
        assert_eq!(
            entries(&table.exact),
            pairs(&[("a.test/foo", "be_app_ex_80")]),
            "{name}"
        );
        assert_eq!(
            entries(&table.prefix),
            pairs(&[("a.test/foo/", "be_app_pre_80")]),
            "{name}"
        );
        assert!(diags.is_empty(), "{name}: {:?}", lines(&diags));
        assert_eq!(table.backends.len(), 2, "{name}");
    }
}

#[test]
fn conflicts_go_to_the_oldest_then_namespace_and_name() {
    use PathType::{Exact, Prefix};
    // (case, [(namespace, name, created, pathType, backend)], winner backend, loser)
    type Claim = (
        &'static str,
        &'static str,
        Option<&'static str>,
        PathType,
        &'static str,
    );
    /// The loser's namespace and name, and the winner's key named in its warning.
    type Loser = Option<(&'static str, &'static str, &'static str)>;
    let cases: &[(&str, &[Claim], &str, Loser)] = &[
        (
            "the older Ingress wins though its name sorts later",
            &[
                ("app", "a", Some("2024-02-01T00:00:00Z"), Prefix, "new"),
                ("app", "z", Some("2024-01-01T00:00:00Z"), Prefix, "old"),
            ],
            "be_app_old_80",
            Some(("app", "a", "app/z")),
        ),
        (
            "the older Ingress wins across namespaces",
            &[
                ("aaa", "x", Some("2023-05-01T10:00:00Z"), Prefix, "new"),
                ("zzz", "x", Some("2023-05-01T09:59:59Z"), Prefix, "old"),
            ],
            "be_zzz_old_80",
            Some(("aaa", "x", "zzz/x")),
        ),
        (
            "same creation time: lower namespace wins",
            &[
                ("b", "a", Some("2024-01-01T00:00:00Z"), Prefix, "second"),
                ("a", "z", Some("2024-01-01T00:00:00Z"), Prefix, "first"),
            ],
            "be_a_first_80",
            Some(("b", "a", "a/z")),
        ),
        (
            "same creation time and namespace: lower name wins",
            &[
                ("app", "b", Some("2024-01-01T00:00:00Z"), Exact, "second"),
                ("app", "a", Some("2024-01-01T00:00:00Z"), Exact, "first"),
            ],
            "be_app_first_80",
            Some(("app", "b", "app/a")),
        ),
        (
            "no creation times: namespace/name decides",
            &[
                ("app", "b", None, Prefix, "second"),
                ("app", "a", None, Prefix, "first"),
            ],
            "be_app_first_80",
            Some(("app", "b", "app/a")),
        ),
        (
            "the same backend twice is no conflict",
            &[
                ("app", "a", Some("2024-02-01T00:00:00Z"), Prefix, "same"),
                ("app", "b", Some("2024-01-01T00:00:00Z"), Prefix, "same"),
            ],
            "be_app_same_80",
            None,
        ),
    ];
    for (name, claims, winner, loser) in cases {
        let ingresses = claims.iter().map(|(ns, n, at, pt, backend)| {
            let ing = routed(ns, n, *pt, "/foo", backend);
            match at {
                Some(at) => created(ing, at),
                None => ing,
            }
        });
        let (table, diags) = build(&store(ingresses));
        assert_eq!(
            table.exact.get("a.test/foo").map(|t| &*t.backend),
            Some(*winner),
            "{name}: exact map"
        );
        if claims[0].3 == Prefix {
            assert_eq!(
                table.prefix.get("a.test/foo/").map(|t| &*t.backend),
                Some(*winner),
                "{name}: prefix map"
            );
        }
        match loser {
            None => assert!(diags.is_empty(), "{name}: {:?}", lines(&diags)),
            Some((ns, n, winner_key)) => {
                assert!(!diags.is_empty(), "{name}: the loser is warned");
                for d in &diags {
                    assert_eq!(d.severity, Severity::Warning, "{name}");
                    assert_eq!(d.object, ingress_ref(ns, n), "{name}");
                    assert!(
                        d.message.contains("already claimed by older")
                            && d.message.contains(&format!("Ingress {winner_key}")),
                        "{name}: {}",
                        d.message
                    );
                }
            }
        }
    }
}

#[test]
fn one_ingress_giving_a_path_twice_keeps_the_first() {
    let mut ing = ingress("app", "web");
    ing.rules = vec![
        rule(
            Some(HOST),
            vec![path(PathType::Prefix, Some("/x"), "first")],
        ),
        rule(
            Some(HOST),
            vec![path(
                PathType::ImplementationSpecific,
                Some("/x/"),
                "second",
            )],
        ),
    ];
    let (table, diags) = build(&store([ing]));
    assert_eq!(
        entries(&table.prefix),
        pairs(&[("a.test/x/", "be_app_first_80")])
    );
    assert_eq!(
        entries(&table.exact),
        pairs(&[("a.test/x", "be_app_first_80")])
    );
    assert!(!diags.is_empty());
    for d in &diags {
        assert_eq!(d.severity, Severity::Warning);
        assert!(d.message.contains("is given twice"), "{}", d.message);
    }
}

#[test]
fn hostile_values_reject_the_whole_ingress() {
    // Each case spoils one value of an otherwise good Ingress (two hosts, TLS,
    // a default backend); the Ingress must then contribute nothing at all.
    type Spoil = fn(&mut Ingress);
    fn port(port: ServicePortRef) -> IngressBackend {
        IngressBackend::Service {
            name: "web".into(),
            port,
        }
    }
    fn bucket() -> IngressBackend {
        IngressBackend::Resource {
            kind: "StorageBucket".into(),
            name: "static".into(),
        }
    }
    #[rustfmt::skip]
    let cases: &[(&str, Spoil, &str)] = &[
        ("newline in host", |i| i.rules[1].host = Some("b.test\n  bind :1".into()), "host"),
        ("space in host", |i| i.rules[1].host = Some("b.test x".into()), "host"),
        ("# in host", |i| i.rules[1].host = Some("b.test#x".into()), "host"),
        ("quote in host", |i| i.rules[1].host = Some("b\".test".into()), "host"),
        ("uppercase host", |i| i.rules[1].host = Some("B.test".into()), "host"),
        ("wildcard inside host", |i| i.rules[1].host = Some("a.*.test".into()), "wildcard"),
        ("newline in path", |i| i.rules[1].paths[0].path = Some("/x\nbind :1".into()), "path"),
        ("space in path", |i| i.rules[1].paths[0].path = Some("/x be_other".into()), "path"),
        ("# in path", |i| i.rules[1].paths[0].path = Some("/x#y".into()), "path"),
        ("quote in path", |i| i.rules[1].paths[0].path = Some("/x\"y".into()), "path"),
        ("relative path", |i| i.rules[1].paths[0].path = Some("x".into()), "must start with '/'"),
        ("Exact without a path", |i| {
            i.rules[1].paths[0].path_type = PathType::Exact;
            i.rules[1].paths[0].path = None;
        }, "Exact needs a path"),
        ("newline in a TLS host", |i| i.tls[0].hosts.push("c.test\nbind :1".into()), "tls: host"),
        ("space in a TLS host", |i| i.tls[0].hosts.push("c.test x".into()), "tls: host"),
        ("newline in a TLS secret", |i| i.tls[0].secret_name = Some("s\nbind :1".into()), "tls secretName"),
        ("space in a TLS secret", |i| i.tls[0].secret_name = Some("a b".into()), "tls secretName"),
        ("# in a TLS secret", |i| i.tls[0].secret_name = Some("a#b".into()), "tls secretName"),
        ("newline in a backend", |i| i.rules[1].paths[0].backend = service("web\nbind"), "backend service name"),
        ("_ in a backend", |i| i.rules[1].paths[0].backend = service("a_b"), "backend service name"),
        ("bad backend port name", |i| i.rules[1].paths[0].backend = port(ServicePortRef::Name("http 1".into())), "port name"),
        ("backend port 0", |i| i.rules[1].paths[0].backend = port(ServicePortRef::Number(0)), "port 0"),
        ("backend port 65536", |i| i.rules[1].paths[0].backend = port(ServicePortRef::Number(65536)), "port 65536"),
        ("hostile defaultBackend", |i| i.default_backend = Some(service("x y")), "defaultBackend"),
        ("resource backend", |i| i.rules[1].paths[0].backend = bucket(), "not supported"),
        ("resource defaultBackend", |i| i.default_backend = Some(bucket()), "defaultBackend: backend resource"),
    ];
    for (name, spoil, reason) in cases {
        let mut bad = ingress("app", "bad");
        bad.rules = vec![
            rule(
                Some("a.test"),
                vec![path(PathType::Prefix, Some("/"), "web")],
            ),
            rule(
                Some("b.test"),
                vec![path(PathType::Exact, Some("/x"), "web")],
            ),
        ];
        bad.tls = vec![IngressTls {
            hosts: vec!["a.test".into()],
            secret_name: Some("tls".into()),
        }];
        bad.default_backend = Some(service("fallback"));
        // The unspoiled Ingress is served; it is the control for each case.
        let (table, diags) = build(&store([bad.clone()]));
        assert!(diags.is_empty(), "{name}: control: {:?}", lines(&diags));
        assert_eq!(table.exact.len(), 1, "{name}: control");
        spoil(&mut bad);

        let good = routed("app", "good", PathType::Exact, "/good", "good");
        let (table, diags) = build(&store([bad, good]));
        assert_eq!(
            entries(&table.exact),
            pairs(&[("a.test/good", "be_app_good_80")]),
            "{name}: only the good Ingress routes"
        );
        assert!(table.prefix.is_empty(), "{name}");
        assert!(table.default_backend.is_none(), "{name}");
        assert!(table.tls.is_empty(), "{name}");
        assert_eq!(table.backends.len(), 1, "{name}: {:?}", table.backends);
        assert_eq!(diags.len(), 1, "{name}: {:?}", lines(&diags));
        assert_eq!(diags[0].severity, Severity::Rejected, "{name}");
        assert_eq!(diags[0].object, ingress_ref("app", "bad"), "{name}");
        assert!(
            diags[0].message.contains(reason),
            "{name}: {:?} lacks {reason:?}",
            diags[0].message
        );
    }
}

#[test]
fn a_bad_namespace_rejects_even_an_ingress_without_routes() {
    // The namespace names the TLS certificate's file and crt-list line.
    for namespace in ["evil\nbind :1", "a b", "../up", "a_b"] {
        let mut ing = ingress(namespace, "tls-only");
        ing.tls = vec![IngressTls {
            hosts: vec!["a.test".into()],
            secret_name: Some("tls".into()),
        }];
        let (table, diags) = build(&store([ing]));
        assert!(table.tls.is_empty(), "{namespace:?}");
        assert_eq!(diags.len(), 1, "{namespace:?}: {:?}", lines(&diags));
        assert_eq!(diags[0].severity, Severity::Rejected, "{namespace:?}");
        assert!(
            diags[0].message.starts_with("namespace "),
            "{}",
            diags[0].message
        );
    }
}

#[test]
fn a_bad_name_rejects_the_ingress_and_reaches_no_map() {
    // The name ends every route's map value: a line break would add a route.
    for name in ["evil\nz.example.com/ be_app_web_80", "a b", "a;b", "A"] {
        let ing = routed("app", name, PathType::Prefix, "/", "web");
        let (table, diags) = build(&store([ing]));
        assert!(
            table.prefix.is_empty() && table.exact.is_empty(),
            "{name:?}"
        );
        assert_eq!(diags.len(), 1, "{name:?}: {:?}", lines(&diags));
        assert_eq!(diags[0].severity, Severity::Rejected, "{name:?}");
        assert!(
            diags[0].message.starts_with("name "),
            "{}",
            diags[0].message
        );
    }
}

#[test]
fn default_backend_comes_from_the_oldest_ingress() {
    let with_default = |name: &str, at: &str, backend: &str| {
        let mut ing = created(ingress("app", name), at);
        ing.default_backend = Some(service(backend));
        ing
    };
    let mut rejected = with_default("ancient", "2020-01-01T00:00:00Z", "rejected");
    rejected.rules = vec![rule(Some("bad host"), vec![])];
    let mut other_class = with_default("foreign", "2019-01-01T00:00:00Z", "foreign");
    other_class.class_name = Some("nginx".into());
    let ingresses = [
        with_default("a-newest", "2024-03-01T00:00:00Z", "newest"),
        with_default("b-oldest", "2024-01-01T00:00:00Z", "oldest"),
        with_default("c-middle", "2024-02-01T00:00:00Z", "middle"),
        rejected,
        other_class,
    ];
    let (table, diags) = build(&store(ingresses));
    let default = table.default_backend.as_ref().map(BackendKey::name);
    assert_eq!(default.as_deref(), Some("be_app_oldest_80"));
    // Only the default backend that is served is a backend.
    let backends: Vec<String> = table.backends.keys().map(BackendKey::name).collect();
    assert_eq!(backends, ["be_app_oldest_80"]);
    assert_eq!(
        table.backends.values().next().map(|r| &r.first),
        Some(&ingress_ref("app", "b-oldest"))
    );
    assert_eq!(
        lines(&diags),
        [
            "rejected: Ingress app/ancient: host \"bad host\": label \"bad host\" may hold only lowercase letters, digits and inner '-'",
            "warning: Ingress app/a-newest: defaultBackend ignored: an older Ingress already sets the default backend",
            "warning: Ingress app/c-middle: defaultBackend ignored: an older Ingress already sets the default backend",
            "ignored: Ingress app/foreign: IngressClass \"nginx\" is not one with controller \"hawser.dev/ingress-controller\"",
        ]
    );
}

#[test]
fn tls_uses_are_merged_per_secret() {
    let with_tls = |ns: &str, name: &str, tls: Vec<(Vec<&str>, Option<&str>)>| {
        let mut ing = ingress(ns, name);
        ing.tls = tls
            .into_iter()
            .map(|(hosts, secret)| IngressTls {
                hosts: hosts.into_iter().map(str::to_string).collect(),
                secret_name: secret.map(str::to_string),
            })
            .collect();
        ing
    };
    let mut foreign = with_tls("app", "foreign", vec![(vec!["f.test"], Some("shared"))]);
    foreign.class_name = Some("nginx".into());
    let ingresses = [
        with_tls(
            "app",
            "one",
            vec![
                (vec!["a.test", "*.a.test"], Some("shared")),
                (vec!["nosecret.test"], None),
            ],
        ),
        with_tls(
            "app",
            "two",
            vec![(vec!["b.test", "a.test"], Some("shared"))],
        ),
        with_tls("app", "three", vec![(vec![], Some("shared"))]),
        with_tls("app", "four", vec![(vec!["d.test"], Some("own"))]),
        with_tls("other", "one", vec![(vec!["o.test"], Some("shared"))]),
        foreign,
    ];
    let (table, diags) = build(&store(ingresses));
    assert_eq!(diags.len(), 1, "{:?}", lines(&diags)); // the foreign one, ignored
    let summary: Vec<(String, Vec<&str>, bool, Vec<String>)> = table
        .tls
        .iter()
        .map(|(key, usage)| {
            (
                key.to_string(),
                usage.hosts.iter().map(String::as_str).collect(),
                usage.own_names,
                usage.referrers.iter().map(|r| r.key.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "app/own".to_string(),
                vec!["d.test"],
                false,
                vec!["app/four".to_string()]
            ),
            (
                "app/shared".to_string(),
                vec!["*.a.test", "a.test", "b.test"],
                true,
                vec![
                    "app/one".to_string(),
                    "app/three".to_string(),
                    "app/two".to_string()
                ]
            ),
            (
                "other/shared".to_string(),
                vec!["o.test"],
                false,
                vec!["other/one".to_string()]
            ),
        ]
    );
}

#[test]
fn backends_remember_their_first_referrer() {
    let ingresses = [
        created(
            routed("app", "b", PathType::Prefix, "/b", "web"),
            "2024-01-01T00:00:00Z",
        ),
        created(
            routed("app", "a", PathType::Prefix, "/a", "web"),
            "2024-02-01T00:00:00Z",
        ),
    ];
    let (table, diags) = build(&store(ingresses));
    assert!(diags.is_empty(), "{:?}", lines(&diags));
    let referrers: Vec<(String, ObjectRef)> = table
        .backends
        .iter()
        .map(|(k, r)| (k.name(), r.first.clone()))
        .collect();
    assert_eq!(
        referrers,
        [("be_app_web_80".to_string(), ingress_ref("app", "b"))]
    );
}

#[test]
fn named_ports_make_their_own_backend() {
    let mut ing = ingress("app", "web");
    ing.rules = vec![rule(
        Some(HOST),
        vec![IngressPath {
            path: Some("/".into()),
            path_type: PathType::Prefix,
            backend: IngressBackend::Service {
                name: "web".into(),
                port: ServicePortRef::Name("http".into()),
            },
        }],
    )];
    let (table, diags) = build(&store([ing]));
    assert!(diags.is_empty(), "{:?}", lines(&diags));
    assert_eq!(
        entries(&table.prefix),
        pairs(&[("a.test/", "be_app_web_http")])
    );
}
