//! A kept routing table is patched when the change allows it, and then is
//! the table made from every Ingress; otherwise it is made again.

use std::collections::BTreeMap;

use hawser_model::{
    IngressBackend, IngressClass, IngressPath, IngressRule, IngressTls, Object, PathType, Secret,
    ServicePortRef,
};

use super::*;

const CONTROLLER: &str = "hawser.dev/ingress-controller";

fn settings() -> Settings {
    Settings {
        ingress_controller: CONTROLLER.to_string(),
        ..Settings::default()
    }
}

/// An Ingress of our class routing `/` of `host` to Service `service`.
fn ingress(name: &str, host: &str, service: &str) -> Ingress {
    Ingress {
        key: ObjectKey::new("app", name),
        created: None,
        class_name: Some("hawser".to_string()),
        annotations: BTreeMap::new(),
        default_backend: None,
        tls: Vec::new(),
        rules: vec![IngressRule {
            host: Some(host.to_string()),
            paths: vec![path("/", service)],
        }],
    }
}

fn path(path: &str, service: &str) -> IngressPath {
    IngressPath {
        path: Some(path.to_string()),
        path_type: PathType::Prefix,
        backend: IngressBackend::Service {
            name: service.to_string(),
            port: ServicePortRef::Number(80),
        },
    }
}

fn with_tls(mut ingress: Ingress, secret: &str, hosts: &[&str]) -> Ingress {
    ingress.tls.push(IngressTls {
        hosts: hosts.iter().map(ToString::to_string).collect(),
        secret_name: Some(secret.to_string()),
    });
    ingress
}

fn store(ingresses: impl IntoIterator<Item = Ingress>) -> Store {
    let mut store = Store::new();
    store.insert(Object::IngressClass(IngressClass {
        name: "hawser".to_string(),
        controller: CONTROLLER.to_string(),
        is_default: false,
    }));
    for ingress in ingresses {
        store.insert(Object::Ingress(ingress));
    }
    store
}

/// The table of `store` made from every Ingress, kept.
fn kept(store: &Store) -> Kept {
    let mut diags = Diagnostics::default();
    let table = route_table(store, &settings(), &mut diags);
    Kept {
        store: store.clone(),
        routing: Routing {
            routes_map: routes_map::entries(&table),
            table,
            reported: diags.into_reported(),
            backends_kept: false,
        },
    }
}

/// All of a table and its reports, to compare a patched one with one made
/// from every Ingress.
fn described(kept: &Kept) -> String {
    let mut reported = kept.routing.reported.clone();
    reported.sort();
    reported.dedup();
    format!("{:#?}\n{reported:#?}", kept.routing.table)
}

/// The backends a table names, each with the object that names it first.
fn named(kept: &Kept) -> Vec<(String, ObjectRef)> {
    (kept.routing.table.backends.iter())
        .map(|(key, referrers)| (key.name(), referrers.first.clone()))
        .collect()
}

/// Patches the table of `before` to `after`: whether it could, and
/// (when it could) checks it is the table made from every Ingress, and
/// that a patch that says it kept the backends did.
fn patched(before: &Store, after: &Store) -> bool {
    let mut last = kept(before);
    let Some(Patched {
        touched,
        backends_kept,
    }) = patch(&mut last, after, &settings())
    else {
        return false;
    };
    let made = kept(after);
    assert_eq!(described(&last), described(&made));
    if backends_kept {
        assert_eq!(named(&kept(before)), named(&made), "backends kept");
    }
    // The routes map patched by the keys touched is the one made.
    let routing = &mut last.routing;
    routes_map::patch(&mut routing.routes_map, &routing.table, &touched);
    assert_eq!(routing.routes_map, made.routing.routes_map);
    true
}

#[test]
fn ingresses_added_changed_and_removed_are_patched_in() {
    let before = store([
        ingress("a", "a.test", "a"),
        with_tls(ingress("b", "b.test", "b"), "shared", &["b.test"]),
        with_tls(ingress("c", "c.test", "c"), "shared", &["c.test"]),
    ]);
    let mut after = before.clone();
    after.remove(&ObjectRef::new(Kind::Ingress, ObjectKey::new("app", "a")));
    let mut b = with_tls(ingress("b", "b.test", "b"), "shared", &["b2.test"]);
    b.rules[0].paths.push(path("/api", "api"));
    after.insert(Object::Ingress(b));
    after.insert(Object::Ingress(ingress("d", "d.test", "c")));
    assert!(patched(&before, &after));

    let mut last = kept(&before);
    let patched_in = patch(&mut last, &after, &settings()).expect("patched");
    assert!(!patched_in.backends_kept, "a backend came and another went");
    let shared = &last.routing.table.tls[&ObjectKey::new("app", "shared")];
    assert_eq!(
        shared.hosts.iter().collect::<Vec<_>>(),
        ["b2.test", "c.test"],
        "a Secret's hosts are those its Ingresses name now"
    );
    let uses: Vec<(String, usize)> = (last.routing.table.backends.iter())
        .map(|(key, referrers)| (key.name(), referrers.uses))
        .collect();
    assert_eq!(
        uses,
        [
            ("be_app_api_80".to_string(), 1),
            ("be_app_b_80".to_string(), 1),
            ("be_app_c_80".to_string(), 2),
        ]
    );
}

#[test]
fn an_ingress_rejected_or_ignored_is_patched_in_with_its_reasons() {
    let before = store([ingress("a", "a.test", "a")]);
    let mut after = before.clone();
    after.insert(Object::Ingress(ingress("bad", "bad host", "b")));
    let mut other_class = ingress("other", "o.test", "o");
    other_class.class_name = Some("nginx".to_string());
    after.insert(Object::Ingress(other_class));
    assert!(patched(&before, &after));
    let mut last = kept(&before);
    patch(&mut last, &after, &settings()).expect("patched");
    assert_eq!(
        last.routing.reported.len(),
        2,
        "{:?}",
        last.routing.reported
    );
}

#[test]
fn a_route_to_a_backend_named_already_keeps_the_backends() {
    let before = store([ingress("a", "a.test", "web"), ingress("b", "b.test", "api")]);
    let patch_to = |after: &Store| {
        let mut last = kept(&before);
        let patched_in = patch(&mut last, after, &settings()).expect("patched");
        patched_in.backends_kept
    };
    // A new Ingress to a Service another routes to, and a path of b's more.
    let mut after = before.clone();
    after.insert(Object::Ingress(ingress("c", "c.test", "web")));
    let mut b = ingress("b", "b.test", "api");
    b.rules[0].paths.push(path("/v2", "api"));
    after.insert(Object::Ingress(b));
    assert!(patched(&before, &after));
    assert!(patch_to(&after), "no backend came or went");
    // A new Service's route names a new backend.
    let mut new_service = before.clone();
    new_service.insert(Object::Ingress(ingress("d", "d.test", "new")));
    assert!(patched(&before, &new_service));
    assert!(!patch_to(&new_service), "a backend came");
    // The last route to a Service going takes its backend.
    let mut gone = before.clone();
    gone.remove(&ObjectRef::new(Kind::Ingress, ObjectKey::new("app", "b")));
    assert!(patched(&before, &gone));
    assert!(!patch_to(&gone), "a backend went");
}

#[test]
fn a_claim_another_ingress_made_makes_the_table_again() {
    let before = store([ingress("a", "a.test", "a"), ingress("b", "b.test", "b")]);
    // b now claims what a holds.
    let mut after = before.clone();
    after.insert(Object::Ingress(ingress("b", "a.test", "b")));
    assert!(!patched(&before, &after));
    // Then a goes: who holds its key depends on b, which lost it.
    let mut gone = after.clone();
    gone.remove(&ObjectRef::new(Kind::Ingress, ObjectKey::new("app", "a")));
    assert!(!patched(&after, &gone));
}

#[test]
fn the_first_user_of_a_shared_backend_leaving_makes_the_table_again() {
    let mut older = ingress("a", "a.test", "shared");
    older.created = Some("2024-01-01T00:00:00Z".to_string());
    let before = store([older, ingress("b", "b.test", "shared")]);
    let mut after = before.clone();
    after.remove(&ObjectRef::new(Kind::Ingress, ObjectKey::new("app", "a")));
    assert!(!patched(&before, &after), "b names the backend first now");
    // A newer user going leaves the first one as it is.
    let mut newer_gone = before.clone();
    newer_gone.remove(&ObjectRef::new(Kind::Ingress, ObjectKey::new("app", "b")));
    assert!(patched(&before, &newer_gone));
}

#[test]
fn what_routes_read_decides_whether_a_change_of_another_kind_keeps_the_table() {
    let secret = Secret {
        key: ObjectKey::new("app", "users"),
        secret_type: "Opaque".to_string(),
        tls_crt: None,
        tls_key: None,
        auth: Some(b"user:$apr1$salt$hash\n".to_vec()),
        ca_crt: None,
        entries: BTreeMap::new(),
    };
    let before = store([ingress("a", "a.test", "a")]);
    let mut after = before.clone();
    after.insert(Object::Secret(secret.clone()));
    assert!(patched(&before, &after), "no route reads a Secret");

    let mut reading = ingress("a", "a.test", "a");
    reading
        .annotations
        .insert("hawser.dev/auth-type".into(), "basic".into());
    reading
        .annotations
        .insert("hawser.dev/auth-secret".into(), "users".into());
    let before = store([reading]);
    let mut after = before.clone();
    after.insert(Object::Secret(secret));
    assert!(!patched(&before, &after), "a's routes read Secret users");
}

#[test]
fn routes_that_depend_on_other_ingresses_make_the_table_again() {
    let mut canary = ingress("canary", "a.test", "next");
    canary
        .annotations
        .insert("hawser.dev/canary".into(), "true".into());
    let before = store([ingress("a", "a.test", "a"), canary]);
    let mut after = before.clone();
    after.insert(Object::Ingress(ingress("b", "b.test", "b")));
    assert!(!patched(&before, &after));
}
