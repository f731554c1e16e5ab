//! The cluster state without watchers: relists, references, Secret reads.

use hawser_model::{Ingress, IngressTls, Secret};

use super::*;
use crate::cluster::watch::Item;

fn scope(kind: Kind) -> Scope {
    Scope {
        kind,
        namespace: None,
    }
}

fn secret(name: &str) -> Item {
    Item::Object(Object::Secret(Secret {
        key: ObjectKey::new("app", name),
        secret_type: "kubernetes.io/tls".into(),
        tls_crt: Some(b"crt".to_vec()),
        tls_key: Some(b"key".to_vec()),
        auth: None,
        ca_crt: None,
        entries: Default::default(),
    }))
}

fn ingress(name: &str, secret: &str) -> Item {
    Item::Object(Object::Ingress(Ingress {
        key: ObjectKey::new("app", name),
        created: None,
        class_name: None,
        annotations: BTreeMap::new(),
        default_backend: None,
        tls: vec![IngressTls {
            hosts: vec![],
            secret_name: Some(secret.into()),
        }],
        rules: vec![],
    }))
}

fn list(cluster: &mut Cluster, kind: Kind, items: Vec<Item>) -> Effect {
    let mut effects = Effect::default();
    let mut changes = vec![Change::Relist];
    changes.extend(items.into_iter().map(Change::Listed));
    changes.push(Change::ListDone);
    for change in changes {
        let effect = cluster.apply(Message::Watch(scope(kind), change));
        effects.fetch.extend(effect.fetch);
    }
    effects
}

fn with_data(cluster: &mut Cluster) -> Vec<String> {
    let (store, _) = cluster.snapshot();
    ["a", "b", "c"]
        .into_iter()
        .filter(|name| {
            store
                .secret(&ObjectKey::new("app", *name))
                .is_some_and(|s| s.tls_crt.is_some())
        })
        .map(String::from)
        .collect()
}

#[test]
fn secrets_listed_before_ingresses_keep_their_data_until_references_are_known() {
    let mut cluster = Cluster::new(
        vec![scope(Kind::Ingress), scope(Kind::Secret)],
        BTreeSet::new(),
    );
    let secrets = list(&mut cluster, Kind::Secret, vec![secret("a"), secret("b")]);
    assert!(secrets.fetch.is_empty());
    assert!(!cluster.ready());
    let ingresses = list(&mut cluster, Kind::Ingress, vec![ingress("i", "a")]);
    // No Secret read: the data was still there.
    assert!(ingresses.fetch.is_empty());
    assert!(cluster.ready());
    assert_eq!(with_data(&mut cluster), ["a"]);
}

#[test]
fn a_newly_referenced_secret_is_read_once_and_a_stale_read_is_ignored() {
    let mut cluster = Cluster::new(
        vec![scope(Kind::Ingress), scope(Kind::Secret)],
        BTreeSet::new(),
    );
    list(&mut cluster, Kind::Ingress, vec![]);
    list(&mut cluster, Kind::Secret, vec![secret("a"), secret("b")]);
    assert!(with_data(&mut cluster).is_empty());

    let effect = cluster.apply(Message::Watch(
        scope(Kind::Ingress),
        Change::Applied(ingress("i", "b")),
    ));
    assert_eq!(effect.fetch, [ObjectKey::new("app", "b")]);
    // A second Ingress on the same Secret asks for nothing more.
    let effect = cluster.apply(Message::Watch(
        scope(Kind::Ingress),
        Change::Applied(ingress("j", "b")),
    ));
    assert!(effect.fetch.is_empty());
    assert!(!cluster.ready(), "a render waits for the read");

    // The watch delivers the Secret first: the later read changes nothing.
    cluster.apply(Message::Watch(
        scope(Kind::Secret),
        Change::Applied(secret("b")),
    ));
    let Item::Object(Object::Secret(mut stale)) = secret("b") else {
        unreachable!()
    };
    stale.tls_crt = Some(b"old".to_vec());
    cluster.apply(Message::Fetched {
        key: ObjectKey::new("app", "b"),
        result: Ok(Some(stale)),
    });
    assert!(cluster.ready());
    let (store, problems) = cluster.snapshot();
    assert!(problems.is_empty());
    assert_eq!(
        store
            .secret(&ObjectKey::new("app", "b"))
            .and_then(|s| s.tls_crt.clone()),
        Some(b"crt".to_vec())
    );
}

#[test]
fn a_failed_read_is_a_problem_and_does_not_block_renders() {
    let mut cluster = Cluster::new(
        vec![scope(Kind::Ingress), scope(Kind::Secret)],
        BTreeSet::new(),
    );
    list(&mut cluster, Kind::Ingress, vec![]);
    list(&mut cluster, Kind::Secret, vec![secret("a")]);
    cluster.apply(Message::Watch(
        scope(Kind::Ingress),
        Change::Applied(ingress("i", "a")),
    ));
    cluster.apply(Message::Fetched {
        key: ObjectKey::new("app", "a"),
        result: Err("forbidden".into()),
    });
    assert!(cluster.ready());
    let (_, problems) = cluster.snapshot();
    assert_eq!(problems, ["Secret app/a: cannot read it: forbidden"]);
}

#[test]
fn a_relist_replaces_only_its_own_namespace() {
    let namespaced = |ns: &str| Scope {
        kind: Kind::Secret,
        namespace: Some(ns.into()),
    };
    let mut cluster = Cluster::new(
        vec![namespaced("app"), namespaced("other")],
        BTreeSet::new(),
    );
    let other = Item::Object(Object::Secret(Secret {
        key: ObjectKey::new("other", "x"),
        secret_type: "kubernetes.io/tls".into(),
        tls_crt: None,
        tls_key: None,
        auth: None,
        ca_crt: None,
        entries: Default::default(),
    }));
    for (scope, item) in [
        (namespaced("app"), secret("a")),
        (namespaced("other"), other),
    ] {
        for change in [Change::Relist, Change::Listed(item), Change::ListDone] {
            cluster.apply(Message::Watch(scope.clone(), change));
        }
    }
    for change in [Change::Relist, Change::ListDone] {
        cluster.apply(Message::Watch(namespaced("app"), change));
    }
    assert_eq!(cluster.status().objects, 1);
    assert_eq!(cluster.status().watches["Secret app"].lists, 2);
}

fn gateway(certificate: &str) -> Item {
    use hawser_model::{AllowedRoutes, CertificateRef, Gateway, Listener, ListenerTls, TlsMode};
    Item::Object(Object::Gateway(Gateway {
        key: ObjectKey::new("app", "edge"),
        generation: Some(1),
        created: None,
        class_name: "hawser".into(),
        listeners: vec![Listener {
            name: "https".into(),
            port: 443,
            protocol: "HTTPS".into(),
            hostname: None,
            tls: Some(ListenerTls {
                mode: TlsMode::Terminate,
                certificate_refs: vec![CertificateRef {
                    group: String::new(),
                    kind: "Secret".into(),
                    name: certificate.into(),
                    namespace: None,
                }],
            }),
            allowed_routes: AllowedRoutes::default(),
        }],
        addresses: Vec::new(),
    }))
}

#[test]
fn a_gateway_listeners_certificate_keeps_its_data() {
    let mut cluster = Cluster::new(
        vec![
            scope(Kind::Ingress),
            scope(Kind::Gateway),
            scope(Kind::Secret),
        ],
        BTreeSet::new(),
    );
    list(&mut cluster, Kind::Ingress, vec![]);
    list(&mut cluster, Kind::Secret, vec![secret("a"), secret("b")]);
    list(&mut cluster, Kind::Gateway, vec![gateway("a")]);
    assert_eq!(with_data(&mut cluster), ["a"]);

    // The listener names another Secret: its data is read, the old one's dropped.
    let effect = cluster.apply(Message::Watch(
        scope(Kind::Gateway),
        Change::Applied(gateway("b")),
    ));
    assert_eq!(effect.fetch, [ObjectKey::new("app", "b")]);
    assert!(with_data(&mut cluster).is_empty());
    assert!(!cluster.ready(), "a render waits for the read");
}

#[test]
fn a_kind_not_served_counts_as_listed_and_is_reported() {
    let mut cluster = Cluster::new(
        vec![scope(Kind::Ingress), scope(Kind::TcpRoute)],
        BTreeSet::new(),
    );
    list(&mut cluster, Kind::Ingress, vec![]);
    assert!(!cluster.ready());
    let effect = cluster.apply(Message::Watch(
        scope(Kind::TcpRoute),
        Change::Unavailable("not served".into()),
    ));
    assert!(effect.changed && cluster.ready());
    let again = cluster.apply(Message::Watch(
        scope(Kind::TcpRoute),
        Change::Unavailable("not served".into()),
    ));
    assert!(!again.changed, "only the first time renders");
    let status = cluster.status();
    assert_eq!(
        status.watches["TCPRoute"].last_error.as_deref(),
        Some("not served")
    );
}

/// The store as a snapshot used to build it: every object anew, less the
/// Secrets held without data.
fn rebuilt(cluster: &Cluster) -> Store {
    let mut store = Store::new();
    for (object_ref, object) in &cluster.objects {
        if !cluster.held_without_data(object_ref) {
            store.insert(object.clone());
        }
    }
    store
}

/// The Secrets referred to as they used to be found: every object walked.
fn referenced_anew(cluster: &Cluster) -> BTreeSet<ObjectKey> {
    let mut referenced = cluster.kept.clone();
    for object in cluster.objects.values() {
        referenced.extend(secrets_named_by(object));
    }
    referenced
}

/// What references promise, after every message: the counts kept object by
/// object say what a walk of every object says; a Secret referred to has
/// its data or is being read; once references are known, one that is not
/// has none.
fn assert_references_hold(cluster: &Cluster, step: usize) {
    let referenced = referenced_anew(cluster);
    let names = ["a", "b", "c", "d"].map(|name| ObjectKey::new("app", name));
    for key in &names {
        assert_eq!(
            cluster.is_referenced(key),
            referenced.contains(key),
            "step {step}: {key}"
        );
        if !cluster
            .objects
            .contains_key(&ObjectRef::new(Kind::Secret, key.clone()))
        {
            continue;
        }
        if referenced.contains(key) {
            assert!(
                !cluster.dropped.contains(key) || cluster.fetching.contains(key),
                "step {step}: {key} is referred to, without its data and not being read"
            );
        } else if cluster.ingresses_synced() {
            assert!(
                cluster.dropped.contains(key),
                "step {step}: {key} is referred to by nothing and keeps its data"
            );
        }
    }
}

#[test]
fn snapshots_and_references_kept_up_to_date_equal_those_built_anew() {
    // splitmix64: the same messages on every run.
    let mut state = 11u64;
    let mut below = |n: u64| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    };
    let names = ["a", "b", "c", "d"];
    let mut cluster = Cluster::new(
        vec![scope(Kind::Ingress), scope(Kind::Secret)],
        [ObjectKey::new("app", "d")].into(),
    );
    for step in 0..600 {
        let name = names[below(4) as usize];
        let other = names[below(4) as usize];
        let message = match below(7) {
            0 => Message::Watch(scope(Kind::Ingress), Change::Applied(ingress(name, other))),
            1 => Message::Watch(
                scope(Kind::Ingress),
                Change::Deleted(ObjectRef::new(Kind::Ingress, ObjectKey::new("app", name))),
            ),
            2 => Message::Watch(scope(Kind::Secret), Change::Applied(secret(name))),
            3 => Message::Watch(
                scope(Kind::Secret),
                Change::Deleted(ObjectRef::new(Kind::Secret, ObjectKey::new("app", name))),
            ),
            4 => {
                let Item::Object(Object::Secret(mut read)) = secret(name) else {
                    unreachable!()
                };
                read.tls_crt = Some(format!("read {step}").into_bytes());
                Message::Fetched {
                    key: ObjectKey::new("app", name),
                    result: Ok(Some(read)),
                }
            }
            5 => {
                let kind = if below(2) == 0 {
                    Kind::Ingress
                } else {
                    Kind::Secret
                };
                let items = (0..below(4))
                    .map(|i| match kind {
                        Kind::Ingress => ingress(names[i as usize], names[below(4) as usize]),
                        _ => secret(names[i as usize]),
                    })
                    .collect();
                list(&mut cluster, kind, items);
                assert_references_hold(&cluster, step);
                continue;
            }
            _ => {
                // Snapshots taken at any point, not only after each message.
                let (store, _) = cluster.snapshot();
                assert_eq!(
                    format!("{store:#?}"),
                    format!("{:#?}", rebuilt(&cluster)),
                    "step {step}"
                );
                continue;
            }
        };
        cluster.apply(message);
        assert_references_hold(&cluster, step);
    }
    let (store, _) = cluster.snapshot();
    assert_eq!(format!("{store:#?}"), format!("{:#?}", rebuilt(&cluster)));
}
