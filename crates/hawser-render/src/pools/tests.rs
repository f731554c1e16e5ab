use hawser_plan::{BackendPlan, BackendRole, Plan, ServerPlan, ServerState, ServicePort};

use super::*;

fn backend(name: &str, balance: &str, servers: &[&str]) -> Arc<BackendPlan> {
    Arc::new(BackendPlan {
        name: name.to_string(),
        source: format!("Service {name}"),
        balance: balance.to_string(),
        timeout_server: None,
        timeout_connect: None,
        servers: servers
            .iter()
            .map(|address| ServerPlan {
                name: format!("ep_{address}_80"),
                address: address.to_string(),
                port: 80,
                weight: 1,
                state: ServerState::Ready,
                resolve: false,
                proto: None,
                keywords: Vec::new(),
            })
            .collect(),
        mode: BackendMode::Http,
        cookie: None,
        role: BackendRole::Named,
        service: Some(ServicePort {
            namespace: "app".to_string(),
            service: name.to_string(),
            port: "80".to_string(),
        }),
    })
}

fn plan(backends: Vec<Arc<BackendPlan>>) -> Plan {
    Plan {
        backends,
        ..Plan::default()
    }
}

fn named<'a>(backends: &'a [Arc<BackendPlan>], name: &str) -> &'a BackendPlan {
    backends
        .iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("no backend {name}"))
}

fn lent_to<'a>(backends: &'a [Arc<BackendPlan>], name: &str) -> &'a BackendPlan {
    backends
        .iter()
        .find(|b| b.role.lent_to() == Some(name))
        .unwrap_or_else(|| panic!("no spare lent to {name}"))
}

#[test]
fn a_fresh_render_declares_a_pool_per_http_shape_and_the_plain_one() {
    let mut tcp = backend("be_a_tcp_80_tcp", "roundrobin", &[]);
    Arc::make_mut(&mut tcp).mode = BackendMode::Tcp;
    let wanted = vec![backend("be_a_web_80", "leastconn", &["10.0.0.1"]), tcp];
    let backends = fresh(wanted, None, 16);
    let spares: Vec<&Arc<BackendPlan>> = backends.iter().filter(|b| b.role.is_spare()).collect();
    assert_eq!(
        spares.len(),
        16 + 2,
        "an eighth for other shapes: {backends:#?}"
    );
    let balances: BTreeSet<&str> = spares.iter().map(|b| b.balance.as_str()).collect();
    assert_eq!(balances, BTreeSet::from(["leastconn", "roundrobin"]));
    assert!(spares.iter().all(|b| b.mode == BackendMode::Http));
    assert!(spares.iter().all(|b| b.servers.is_empty()));
    assert!(fresh(vec![backend("be_a_web_80", "roundrobin", &[])], None, 0).len() == 1);
}

#[test]
fn a_new_backend_borrows_a_spare_of_its_shape_and_keeps_it() {
    let first = plan(fresh(
        vec![backend("be_a_web_80", "roundrobin", &["10.0.0.1"])],
        None,
        2,
    ));
    let wanted = vec![
        backend("be_a_web_80", "roundrobin", &["10.0.0.1"]),
        backend("be_b_new_80", "roundrobin", &["10.0.0.2"]),
    ];
    let second = lend(&wanted, &first).expect("a spare is free");
    let names = |p: &[Arc<BackendPlan>]| p.iter().map(|b| b.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&second),
        names(&first.backends),
        "the same backends are declared"
    );
    let spare = lent_to(&second, "be_b_new_80");
    assert_eq!(spare.servers[0].address, "10.0.0.2");
    assert_eq!(spare.source, "Service be_b_new_80");
    let map = spares_map(&second);
    assert_eq!(map.entries.len(), 1);
    assert_eq!(
        (&*map.entries[0].key, &*map.entries[0].value),
        ("be_b_new_80", spare.name.as_str())
    );

    // The next render keeps it where it is, with its servers as they are now.
    let mut again = wanted.clone();
    Arc::make_mut(&mut again[1]).servers =
        backend("x", "roundrobin", &["10.0.0.3"]).servers.clone();
    let third = lend(&again, &plan(second.clone())).expect("kept");
    let kept = lent_to(&third, "be_b_new_80");
    assert_eq!(kept.name, spare.name);
    assert_eq!(kept.servers[0].address, "10.0.0.3");
}

#[test]
fn a_backend_of_a_shape_without_a_free_spare_needs_a_fresh_render() {
    let first = plan(fresh(Vec::new(), None, 1));
    let one = vec![backend("be_b_one_80", "roundrobin", &[])];
    let second = plan(lend(&one, &first).expect("one spare"));
    let two = vec![one[0].clone(), backend("be_b_two_80", "roundrobin", &[])];
    assert!(lend(&two, &second).is_none(), "the pool is dry");
    let other_shape = vec![backend("be_b_one_80", "source", &[])];
    assert!(
        lend(&other_shape, &second).is_none(),
        "no pool of that shape"
    );

    // The fresh render that follows gives each its own backend and twice
    // the spares the dry pool lent.
    let refilled = fresh(two, Some(&second), 1);
    assert_eq!(named(&refilled, "be_b_one_80").role, BackendRole::Named);
    assert_eq!(
        refilled
            .iter()
            .filter(|b| b.role == BackendRole::Spare)
            .count(),
        2
    );
}

#[test]
fn a_backend_that_goes_stays_declared_and_a_released_spare_is_free_one_version_later() {
    let first = plan(fresh(
        vec![backend("be_a_web_80", "roundrobin", &["10.0.0.1"])],
        None,
        2,
    ));
    let second = plan(
        lend(
            &[backend("be_b_new_80", "roundrobin", &["10.0.0.2"])],
            &first,
        )
        .unwrap(),
    );
    let spare = lent_to(&second.backends, "be_b_new_80").name.clone();
    let retired = named(&second.backends, "be_a_web_80");
    assert_eq!(retired.role, BackendRole::Retired);
    assert!(retired.servers.is_empty());
    assert_eq!(
        retired.source, "Service be_a_web_80",
        "its mark is unchanged"
    );

    // b goes as c comes: c may not have b's spare while b's servers drain.
    let third = plan(lend(&[backend("be_c_new_80", "roundrobin", &[])], &second).unwrap());
    assert_eq!(named(&third.backends, &spare).role, BackendRole::Released);
    assert_ne!(lent_to(&third.backends, "be_c_new_80").name, spare);
    // A version later it is free again, and a returning Service takes its
    // own retired backend back.
    let wanted = [
        backend("be_a_web_80", "roundrobin", &["10.0.0.9"]),
        backend("be_c_new_80", "roundrobin", &[]),
        backend("be_d_new_80", "roundrobin", &[]),
    ];
    let fourth = lend(&wanted, &third).expect("the released spare is free");
    assert_eq!(lent_to(&fourth, "be_d_new_80").name, spare);
    assert_eq!(named(&fourth, "be_a_web_80").role, BackendRole::Named);
}

#[test]
fn a_named_backend_that_changes_shape_needs_a_fresh_render() {
    let first = plan(fresh(
        vec![backend("be_a_web_80", "roundrobin", &[])],
        None,
        2,
    ));
    assert!(lend(&[backend("be_a_web_80", "leastconn", &[])], &first).is_none());
}

#[test]
fn a_lent_or_retired_backend_named_in_the_configuration_is_found_as_a_whole_word() {
    let first = plan(fresh(
        vec![backend("be_a_old_80", "roundrobin", &[])],
        None,
        1,
    ));
    let backends = lend(&[backend("be_a_web_80", "roundrobin", &[])], &first).unwrap();
    assert!(config_misnames(
        "  default_backend be_a_web_80\n",
        &backends
    ));
    assert!(config_misnames("str(be_a_web_80) if", &backends));
    assert!(!config_misnames(
        "  use_backend be_a_web_80_h2\n",
        &backends
    ));
    assert!(!config_misnames("  use_backend xbe_a_web_80\n", &backends));
    assert!(!config_misnames(
        "map_str(maps/spare_backends.map)",
        &backends
    ));
    // A retired backend may be declared, and named nowhere else.
    let declared = "backend be_a_old_80\n  balance roundrobin\n";
    assert!(!config_misnames(declared, &backends));
    let used = format!("{declared}frontend f\n  use_backend be_a_old_80\n");
    assert!(config_misnames(&used, &backends));
}

#[test]
fn the_status_names_the_service_a_spare_is_lent_to() {
    let free = fresh(Vec::new(), None, 1).remove(0);
    let lent = lend(
        &[backend("be_a_web_80", "roundrobin", &["10.0.0.1"])],
        &plan(vec![free.clone()]),
    )
    .unwrap()
    .remove(0);
    assert_ne!(lent, free);
    // Metrics name a lent spare after its Service, a free one after none.
    assert_eq!(free.service, None);
    let holder = lent
        .service
        .as_ref()
        .expect("a lent spare names its Service");
    assert_eq!(holder.service, "be_a_web_80");
    let status = SpareStatus::of(&plan(vec![lent]));
    assert_eq!(status.free, 0);
    assert_eq!(status.lent[&free.name].backend, "be_a_web_80");
}

/// `lend` as maps say it: each backend looked up by name, the result
/// sorted. The function under test walks sorted lists instead; both must
/// give the same backends.
fn lend_by_maps(wanted: &[Arc<BackendPlan>], previous: &Plan) -> Option<Vec<BackendPlan>> {
    let mut wanted: BTreeMap<&str, &Arc<BackendPlan>> =
        wanted.iter().map(|b| (b.name.as_str(), b)).collect();
    let mut backends = Vec::new();
    let (spares, named): (Vec<_>, Vec<_>) =
        previous.backends.iter().partition(|b| b.role.is_spare());
    for was in named {
        match wanted.remove(was.name.as_str()) {
            Some(now) if now.same_shape(was) => backends.push(Arc::clone(now)),
            Some(_) => return None,
            None => backends.push(emptied(was, was.source.clone(), BackendRole::Retired)),
        }
    }
    let mut free: BTreeMap<BackendShape, Vec<&Arc<BackendPlan>>> = BTreeMap::new();
    for was in spares {
        let kept = (was.role.lent_to())
            .and_then(|name| wanted.get(name).copied())
            .filter(|now| now.same_shape(was));
        match (&was.role, kept) {
            (_, Some(now)) => {
                wanted.remove(now.name.as_str());
                backends.push(lent(was, now));
            }
            (BackendRole::Lent { .. }, None) => {
                backends.push(emptied(was, SPARE_SOURCE.into(), BackendRole::Released));
            }
            _ => free.entry(was.shape()).or_default().push(was),
        }
    }
    for now in wanted.into_values() {
        let pool = free.get_mut(&now.shape()).filter(|pool| !pool.is_empty())?;
        backends.push(lent(pool.remove(0), now));
    }
    let left = free.into_values().flatten();
    backends.extend(left.map(|was| emptied(was, SPARE_SOURCE.into(), BackendRole::Spare)));
    backends.sort_by(|a, b| a.name.cmp(&b.name));
    Some(backends.into_iter().map(Arc::unwrap_or_clone).collect())
}

#[test]
fn lending_walked_in_order_equals_lending_looked_up_by_name() {
    // A small generator of its own: the same sequence on every run.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut below = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let balances = ["roundrobin", "leastconn"];
    let wanted_now = |below: &mut dyn FnMut(usize) -> usize| {
        let mut wanted = Vec::new();
        for i in 0..12 {
            if below(3) == 0 {
                continue;
            }
            let servers: &[&str] = [&["10.0.0.1"][..], &["10.0.0.2", "10.0.0.3"], &[]][below(3)];
            let balance = balances[below(5) / 4];
            wanted.push(backend(&format!("be_ns_s{i}_80"), balance, servers));
        }
        wanted.sort_by(|a, b| a.name.cmp(&b.name));
        wanted
    };
    let mut lent_some = 0;
    for _ in 0..300 {
        let mut previous = plan(fresh(wanted_now(&mut below), None, 1 + below(4) as u32));
        for _ in 0..8 {
            let wanted = wanted_now(&mut below);
            let walked = lend(&wanted, &previous);
            let model = lend_by_maps(&wanted, &previous);
            let as_values = |b: &Vec<Arc<BackendPlan>>| {
                b.iter().map(|b| BackendPlan::clone(b)).collect::<Vec<_>>()
            };
            assert_eq!(
                walked.as_ref().map(as_values),
                model,
                "{wanted:#?}\n{previous:#?}"
            );
            match walked {
                Some(backends) => {
                    lent_some += usize::from(backends.iter().any(|b| b.role.lent_to().is_some()));
                    previous = plan(backends);
                }
                None => previous = plan(fresh(wanted, Some(&previous), 2)),
            }
        }
    }
    assert!(lent_some > 100, "spares were lent in {lent_some} versions");
}
