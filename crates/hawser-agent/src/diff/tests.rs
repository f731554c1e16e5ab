//! Table-driven: each kind of change → the runtime operations or a reload.

use hawser_plan::{BackendMode, BackendRole, CrtListPlan, MapEntry, MapPlan, MatchKind};

use super::*;

#[derive(Clone)]
struct Version {
    plan: Plan,
    files: FileSet,
}

impl Version {
    fn view(&self) -> VersionView<'_> {
        VersionView {
            plan: &self.plan,
            files: &self.files,
        }
    }
}

fn server(name: &str, address: &str, port: u16) -> ServerPlan {
    ServerPlan {
        name: name.to_string(),
        address: address.to_string(),
        port,
        weight: 1,
        state: ServerState::Ready,
        resolve: false,
        proto: None,
        keywords: Vec::new(),
    }
}

/// One backend with two servers, one map, a default and one SNI certificate.
fn base() -> Version {
    let plan = Plan {
        structure_digest: "s1".to_string(),
        backends: vec![
            BackendPlan {
                name: "be_app_web_80".to_string(),
                source: "Service app/web port 80".to_string(),
                balance: "roundrobin".to_string(),
                timeout_server: None,
                timeout_connect: None,
                servers: vec![server("a", "10.0.0.1", 80), server("b", "10.0.0.2", 80)],
                mode: BackendMode::Http,
                cookie: None,
                role: Default::default(),
                service: None,
            }
            .into(),
        ],
        maps: vec![MapPlan {
            path: "maps/exact.map".to_string(),
            match_kind: MatchKind::Str,
            entries: vec![MapEntry::new("a.test/", "be_app_web_80")],
            twin: None,
        }],
        certificates: vec![],
        crt_lists: vec![CrtListPlan {
            path: "certs/crt-list.txt".to_string(),
            entries: vec![
                CrtListEntry {
                    certificate: "certs/default.pem".to_string(),
                    sni: vec![],
                    options: Vec::new(),
                },
                CrtListEntry {
                    certificate: "certs/app_a.pem".to_string(),
                    sni: vec!["a.test".to_string()],
                    options: Vec::new(),
                },
            ],
        }],
    };
    let mut files = FileSet::default();
    files.insert("haproxy.cfg", FileKind::Config, "cfg servers a b");
    files.insert("maps/exact.map", FileKind::Map, "a.test/ be_app_web_80\n");
    files.insert("lua/mirror.lua", FileKind::Lua, "-- mirror");
    files.insert("certs/default.pem", FileKind::Certificate, "default");
    files.insert("certs/app_a.pem", FileKind::Certificate, "a1");
    files.insert("certs/crt-list.txt", FileKind::CrtList, "list1");
    Version { plan, files }
}

fn servers(v: &mut Version) -> &mut Vec<ServerPlan> {
    &mut Arc::make_mut(&mut v.plan.backends[0]).servers
}

fn crt_entries(v: &mut Version) -> &mut Vec<CrtListEntry> {
    &mut v.plan.crt_lists[0].entries
}

fn runtime(ops: Vec<RuntimeOp>) -> Decision {
    Decision::Runtime(ops)
}

fn is_reload(decision: &Decision) -> bool {
    matches!(decision, Decision::Reload(_))
}

#[test]
fn identical_versions_are_a_no_op() {
    let v = base();
    assert_eq!(decide(v.view(), v.view()), Decision::NoOp);
}

#[test]
fn runtime_changes() {
    type Edit = fn(&mut Version);
    let cases: Vec<(&str, Edit, Vec<RuntimeOp>)> = vec![
        (
            "endpoint added",
            |v| {
                servers(v).push(server("c", "10.0.0.3", 80));
                v.files
                    .insert("haproxy.cfg", FileKind::Config, "cfg servers a b c");
            },
            vec![RuntimeOp::AddServer {
                backend: "be_app_web_80".into(),
                server: server("c", "10.0.0.3", 80),
            }],
        ),
        (
            "endpoint removed",
            |v| {
                servers(v).remove(1);
            },
            vec![RuntimeOp::RemoveServer {
                backend: "be_app_web_80".into(),
                server: "b".into(),
            }],
        ),
        (
            "endpoint readdressed, reweighted and put in maintenance",
            |v| {
                let s = &mut servers(v)[0];
                s.address = "10.0.0.9".into();
                s.port = 8080;
                s.weight = 5;
                s.state = ServerState::Maintenance;
            },
            vec![
                RuntimeOp::SetServerAddress {
                    backend: "be_app_web_80".into(),
                    server: "a".into(),
                    address: "10.0.0.9".into(),
                    port: 8080,
                },
                RuntimeOp::SetServerWeight {
                    backend: "be_app_web_80".into(),
                    server: "a".into(),
                    weight: 5,
                },
                RuntimeOp::SetServerState {
                    backend: "be_app_web_80".into(),
                    server: "a".into(),
                    state: ServerState::Maintenance,
                },
            ],
        ),
        (
            "map content",
            |v| {
                v.files
                    .insert("maps/exact.map", FileKind::Map, "b.test/ be_app_web_80\n")
            },
            vec![RuntimeOp::ReplaceMap {
                path: "maps/exact.map".into(),
            }],
        ),
        (
            "certificate content, the default one included",
            |v| {
                v.files
                    .insert("certs/app_a.pem", FileKind::Certificate, "a2");
                v.files
                    .insert("certs/default.pem", FileKind::Certificate, "default2");
            },
            vec![
                RuntimeOp::UpdateCertificate {
                    path: "certs/app_a.pem".into(),
                },
                RuntimeOp::UpdateCertificate {
                    path: "certs/default.pem".into(),
                },
            ],
        ),
        (
            "certificate added to the crt-list",
            |v| {
                crt_entries(v).push(CrtListEntry {
                    certificate: "certs/app_b.pem".into(),
                    sni: vec!["b.test".into()],
                    options: Vec::new(),
                });
                v.files
                    .insert("certs/app_b.pem", FileKind::Certificate, "b1");
                v.files
                    .insert("certs/crt-list.txt", FileKind::CrtList, "list2");
            },
            vec![RuntimeOp::AddCertificate {
                path: "certs/app_b.pem".into(),
                crt_list: "certs/crt-list.txt".into(),
                sni: vec!["b.test".into()],
            }],
        ),
        (
            "certificate removed from the crt-list",
            |v| {
                crt_entries(v).pop();
                v.files = {
                    let mut f = FileSet::default();
                    for (p, file) in v.files.iter().filter(|(p, _)| *p != "certs/app_a.pem") {
                        f.insert(p, file.kind, file.content.clone());
                    }
                    f
                };
            },
            vec![RuntimeOp::RemoveCertificate {
                path: "certs/app_a.pem".into(),
                crt_list: "certs/crt-list.txt".into(),
            }],
        ),
    ];
    for (name, edit, expected) in cases {
        let running = base();
        let mut desired = base();
        edit(&mut desired);
        assert_eq!(
            decide(running.view(), desired.view()),
            runtime(expected),
            "{name}"
        );
    }
}

#[test]
fn operations_are_ordered_adds_before_routes_before_removals() {
    let running = base();
    let mut desired = base();
    servers(&mut desired).remove(0);
    servers(&mut desired).push(server("c", "10.0.0.3", 80));
    desired
        .files
        .insert("maps/exact.map", FileKind::Map, "new\n");
    let Decision::Runtime(ops) = decide(running.view(), desired.view()) else {
        panic!("expected runtime ops");
    };
    let kinds: Vec<&str> = ops
        .iter()
        .map(|op| match op {
            RuntimeOp::AddServer { .. } => "add",
            RuntimeOp::ReplaceMap { .. } => "map",
            RuntimeOp::RemoveServer { .. } => "remove",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["add", "map", "remove"]);
}

#[test]
fn reload_changes() {
    type Edit = fn(&mut Version);
    let cases: Vec<(&str, Edit)> = vec![
        ("structure changed", |v| {
            v.plan.structure_digest = "s2".into()
        }),
        ("backend added", |v| {
            let mut b = BackendPlan::clone(&v.plan.backends[0]);
            b.name = "be_app_api_80".into();
            v.plan.backends.push(b.into());
        }),
        ("new map file", |v| {
            v.files.insert("maps/other.map", FileKind::Map, "")
        }),
        ("default certificate replaced by another file", |v| {
            crt_entries(v)[0].certificate = "certs/other.pem".into();
        }),
        ("SNI names changed", |v| {
            crt_entries(v)[1].sni.push("c.test".into())
        }),
        ("certificate listed twice", |v| {
            let again = CrtListEntry {
                certificate: "certs/app_a.pem".into(),
                sni: vec![],
                options: Vec::new(),
            };
            crt_entries(v).push(again);
        }),
        ("client certificates asked on an entry", |v| {
            crt_entries(v)[1].options = ["ca-file", "certs/ca.pem", "verify", "optional"]
                .map(str::to_string)
                .to_vec();
        }),
        ("certificate added asking for client certificates", |v| {
            crt_entries(v).push(CrtListEntry {
                certificate: "certs/app_b.pem".into(),
                sni: vec!["b.test".into()],
                options: vec!["verify".into(), "optional".into()],
            });
            v.files
                .insert("certs/app_b.pem", FileKind::Certificate, "b1");
        }),
        ("a CA file changed", |v| {
            v.files
                .insert("certs/ca_app_pods.pem", FileKind::CaFile, "ca2")
        }),
        ("DNS-named server added", |v| {
            let mut s = server("ext", "api.example.com", 443);
            s.resolve = true;
            servers(v).push(s);
        }),
        ("file changed kind", |v| {
            v.files.insert("maps/exact.map", FileKind::Config, "x")
        }),
        ("Lua file changed", |v| {
            v.files
                .insert("lua/mirror.lua", FileKind::Lua, "-- mirror v2")
        }),
        ("certificate file without crt-list entry", |v| {
            v.files
                .insert("certs/stray.pem", FileKind::Certificate, "x");
        }),
    ];
    for (name, edit) in cases {
        let running = base();
        let mut desired = base();
        edit(&mut desired);
        let decision = decide(running.view(), desired.view());
        assert!(is_reload(&decision), "{name}: {decision:?}");
    }
}

/// `base` with the backend as a spare lent to `to` (or free), serving `servers`.
fn spare(role: BackendRole, servers: Vec<ServerPlan>) -> Version {
    let mut v = base();
    let backend = Arc::make_mut(&mut v.plan.backends[0]);
    backend.name = "hawser_spare_1".into();
    backend.role = role;
    backend.servers = servers;
    v
}

fn lent(to: &str) -> BackendRole {
    BackendRole::Lent {
        name: to.into(),
        source: format!("Service app/{to} port 80"),
    }
}

#[test]
fn a_spare_lent_to_a_new_service_is_filled_at_runtime() {
    let free = spare(BackendRole::Spare, vec![]);
    let mut taken = spare(lent("be_app_new_80"), vec![server("c", "10.0.0.3", 80)]);
    taken.files.insert(
        "maps/exact.map",
        FileKind::Map,
        "a.test/ be_app_web_80\nn.test/ be_app_new_80\n",
    );
    assert_eq!(
        decide(free.view(), taken.view()),
        runtime(vec![
            RuntimeOp::AddServer {
                backend: "hawser_spare_1".into(),
                server: server("c", "10.0.0.3", 80),
            },
            RuntimeOp::ReplaceMap {
                path: "maps/exact.map".into(),
            },
        ])
    );
    // And emptied when the Service goes, after the map stops routing there.
    let released = spare(BackendRole::Released, vec![]);
    assert_eq!(
        decide(taken.view(), released.view()),
        runtime(vec![
            RuntimeOp::ReplaceMap {
                path: "maps/exact.map".into(),
            },
            RuntimeOp::RemoveServer {
                backend: "hawser_spare_1".into(),
                server: "c".into(),
            },
        ])
    );
}

#[test]
fn a_spare_changing_hands_in_one_step_takes_a_reload() {
    let old = spare(lent("be_app_old_80"), vec![server("a", "10.0.0.1", 80)]);
    let new = spare(lent("be_app_new_80"), vec![server("c", "10.0.0.3", 80)]);
    let Decision::Reload(reasons) = decide(old.view(), new.view()) else {
        panic!("expected a reload");
    };
    assert!(reasons[0].contains("hawser_spare_1 goes from be_app_old_80 to be_app_new_80"));
}

/// `base` with its (`str`) map holding these entries, in the plan and the file.
fn with_map(kind: MatchKind, entries: &[(&str, &str)]) -> Version {
    let mut v = base();
    let map = &mut v.plan.maps[0];
    map.match_kind = kind;
    map.entries = entries
        .iter()
        .map(|(key, value)| MapEntry::new(*key, *value))
        .collect();
    let file = map.to_file();
    v.files.insert("maps/exact.map", FileKind::Map, file);
    v
}

#[test]
fn one_changed_entry_of_a_tree_map_is_edited_alone() {
    let old = with_map(MatchKind::Beg, &[("a/", "be_a"), ("b/", "be_b")]);
    let edit = |edit| {
        runtime(vec![RuntimeOp::EditMap {
            path: "maps/exact.map".into(),
            edit,
        }])
    };
    let added = with_map(
        MatchKind::Beg,
        &[("a/", "be_a"), ("b/", "be_b"), ("b/c/", "be_c")],
    );
    let key = |k: &str| k.to_string();
    assert_eq!(
        decide(old.view(), added.view()),
        edit(MapEdit::Add {
            key: key("b/c/"),
            value: "be_c".into()
        })
    );
    let moved = with_map(MatchKind::Beg, &[("a/", "be_a"), ("b/", "be_x")]);
    assert_eq!(
        decide(old.view(), moved.view()),
        edit(MapEdit::Set {
            key: key("b/"),
            value: "be_x".into()
        })
    );
    let removed = with_map(MatchKind::Beg, &[("a/", "be_a")]);
    assert_eq!(
        decide(old.view(), removed.view()),
        edit(MapEdit::Del { key: key("b/") })
    );
}

#[test]
fn several_changed_entries_of_a_tree_map_are_edited_one_by_one() {
    let edit = |edit| RuntimeOp::EditMap {
        path: "maps/exact.map".into(),
        edit,
    };
    let old = with_map(MatchKind::Beg, &[("a/", "be_a"), ("b/", "be_b")]);
    let new = with_map(
        MatchKind::Beg,
        &[("a/", "be_x"), ("c/", "be_c"), ("c/d/", "be_d")],
    );
    // Added longest first, then changed, then removed (see `map_edits`).
    assert_eq!(
        decide(old.view(), new.view()),
        runtime(vec![
            edit(MapEdit::Add {
                key: "c/d/".into(),
                value: "be_d".into()
            }),
            edit(MapEdit::Add {
                key: "c/".into(),
                value: "be_c".into()
            }),
            edit(MapEdit::Set {
                key: "a/".into(),
                value: "be_x".into()
            }),
            edit(MapEdit::Del { key: "b/".into() }),
        ])
    );
}

#[test]
fn a_list_map_or_a_repeated_key_is_replaced_whole() {
    let replace = runtime(vec![RuntimeOp::ReplaceMap {
        path: "maps/exact.map".into(),
    }]);
    // `reg` maps are tried in file order: an entry added last would be tried last.
    let old = with_map(MatchKind::Reg, &[("^a", "be_a")]);
    let new = with_map(MatchKind::Reg, &[("^ab", "be_b"), ("^a", "be_a")]);
    assert_eq!(decide(old.view(), new.view()), replace);

    let old = with_map(MatchKind::Str, &[("a", "be_a"), ("b", "be_b")]);
    let new = with_map(
        MatchKind::Str,
        &[("a", "be_a"), ("b", "be_b"), ("b", "be_c")],
    );
    assert_eq!(decide(old.view(), new.view()), replace);
}

#[test]
fn servers_of_backends_both_versions_declare_alike_change_alone() {
    let running = base();
    let mut desired = base();
    desired.plan.structure_digest = "s2".into();
    servers(&mut desired).push(server("c", "10.0.0.3", 80));
    let mut other = BackendPlan::clone(&desired.plan.backends[0]);
    other.name = "be_app_other_80".into();
    desired.plan.backends.push(other.into());
    assert!(is_reload(&decide(running.view(), desired.view())));
    assert_eq!(
        server_changes_alone(&running.plan, &desired.plan),
        vec![RuntimeOp::AddServer {
            backend: "be_app_web_80".into(),
            server: server("c", "10.0.0.3", 80),
        }],
        "the new backend waits for the reload; the known one does not"
    );
    // A server whose change needs the reload holds them all back.
    servers(&mut desired)[0].keywords = vec!["ssl".into()];
    assert!(server_changes_alone(&running.plan, &desired.plan).is_empty());
    // So does a spare changing hands.
    let old = spare(lent("be_app_old_80"), vec![server("a", "10.0.0.1", 80)]);
    let new = spare(lent("be_app_new_80"), vec![server("c", "10.0.0.3", 80)]);
    assert!(server_changes_alone(&old.plan, &new.plan).is_empty());
}

#[test]
fn certificates_renewed_in_place_change_alone() {
    let running = base();
    let mut desired = base();
    desired.plan.structure_digest = "s2".into();
    desired
        .files
        .insert("certs/app_a.pem", FileKind::Certificate, "a2");
    desired
        .files
        .insert("certs/app_b.pem", FileKind::Certificate, "b1");
    crt_entries(&mut desired).push(CrtListEntry {
        certificate: "certs/app_b.pem".into(),
        sni: vec!["b.test".into()],
        options: Vec::new(),
    });
    assert!(is_reload(&decide(running.view(), desired.view())));
    assert_eq!(
        certificate_renewals_alone(running.view(), desired.view()),
        vec![RuntimeOp::UpdateCertificate {
            path: "certs/app_a.pem".into()
        }],
        "the renewal goes now; the new certificate waits for the reload"
    );
    // A certificate whose crt-list entry changes too waits for the reload.
    crt_entries(&mut desired)[1].sni = vec!["a.test".into(), "www.a.test".into()];
    assert!(certificate_renewals_alone(running.view(), desired.view()).is_empty());
}
