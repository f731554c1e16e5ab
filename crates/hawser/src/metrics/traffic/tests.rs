use hawser_agent::ServedBackends;
use hawser_haproxy::Stats;
use hawser_plan::{BackendPlan, BackendRole, Plan, ServicePort};

use super::{Traffic, server_state};

fn port(service: &str) -> ServicePort {
    ServicePort {
        namespace: "app".into(),
        service: service.into(),
        port: "80".into(),
    }
}

fn backend(name: &str, role: BackendRole, service: Option<&str>) -> BackendPlan {
    BackendPlan {
        name: name.into(),
        source: String::new(),
        balance: "roundrobin".into(),
        timeout_server: None,
        timeout_connect: None,
        servers: Vec::new(),
        mode: Default::default(),
        cookie: None,
        role,
        service: service.map(port),
    }
}

fn lent(to: &str) -> BackendRole {
    BackendRole::Lent {
        name: format!("be_app_{to}_80"),
        source: String::new(),
    }
}

fn served(backends: Vec<BackendPlan>) -> ServedBackends {
    ServedBackends::of(&Plan {
        backends: backends.into_iter().map(Into::into).collect(),
        ..Plan::default()
    })
}

/// `show stat` with one row per (backend, requests, 5xx responses) and a
/// server row each.
fn stats(rows: &[(&str, u64, u64)]) -> Stats {
    let mut csv = String::from("# pxname,svname,qcur,req_tot,hrsp_2xx,hrsp_5xx,status,rtime,\n");
    for (backend, requests, errors) in rows {
        let ok = requests - errors;
        csv.push_str(&format!("{backend},s1,0,,,,UP,,\n"));
        csv.push_str(&format!(
            "{backend},BACKEND,1,{requests},{ok},{errors},UP,7,\n"
        ));
    }
    Stats::parse(&csv).expect("parses")
}

fn requests(traffic: &Traffic, stats: &Stats, served: &ServedBackends, service: &str) -> u64 {
    traffic
        .service_figures(stats, served)
        .get(&port(service))
        .map_or(0, |f| f.counters.requests)
}

#[test]
fn a_services_own_backend_counts_from_zero_and_starts_again_after_a_reload() {
    let traffic = Traffic::default();
    let served = served(vec![backend(
        "be_app_web_80",
        BackendRole::Named,
        Some("web"),
    )]);
    assert_eq!(
        requests(
            &traffic,
            &stats(&[("be_app_web_80", 40, 1)]),
            &served,
            "web"
        ),
        40
    );
    let figures = traffic.service_figures(&stats(&[("be_app_web_80", 50, 2)]), &served);
    let web = &figures[&port("web")];
    assert_eq!(web.counters.requests, 50);
    assert_eq!(web.counters.responses, [0, 48, 0, 0, 2, 0]);
    assert_eq!(web.queue, 1);
    assert_eq!(web.servers.get("up"), Some(&1));
    assert_eq!(web.times_ms[2], 7, "the response time column");
    // A new worker counts from zero: Prometheus reads a reset.
    assert_eq!(
        requests(&traffic, &stats(&[("be_app_web_80", 3, 0)]), &served, "web"),
        3
    );
}

#[test]
fn a_spare_counts_only_what_it_served_for_the_service_it_is_lent_to() {
    let traffic = Traffic::default();
    let spare = "hawser_spare_plain_0";
    let to_new = served(vec![backend(spare, lent("new"), Some("new"))]);
    // Its history (another Service's 500 requests) is not the new one's.
    assert_eq!(
        requests(&traffic, &stats(&[(spare, 500, 0)]), &to_new, "new"),
        0
    );
    assert_eq!(
        requests(&traffic, &stats(&[(spare, 530, 0)]), &to_new, "new"),
        30
    );
    // Lent to another Service: it starts again for that one.
    let to_other = served(vec![backend(spare, lent("other"), Some("other"))]);
    assert_eq!(
        requests(&traffic, &stats(&[(spare, 540, 0)]), &to_other, "other"),
        0
    );
    assert_eq!(
        requests(&traffic, &stats(&[(spare, 545, 0)]), &to_other, "other"),
        5
    );
    // A free spare serves nobody.
    let free = served(vec![backend(spare, BackendRole::Spare, None)]);
    assert!(
        traffic
            .service_figures(&stats(&[(spare, 600, 0)]), &free)
            .is_empty()
    );
}

#[test]
fn a_services_backends_add_up() {
    let traffic = Traffic::default();
    let served = served(vec![
        backend("be_app_web_80", BackendRole::Named, Some("web")),
        backend("be_app_web_80_h2", BackendRole::Named, Some("web")),
        backend("be_app_api_80", BackendRole::Named, Some("api")),
    ]);
    let stats = stats(&[
        ("be_app_web_80", 10, 0),
        ("be_app_web_80_h2", 5, 0),
        ("be_app_api_80", 7, 0),
        ("hawser_not_found", 99, 0),
    ]);
    let figures = traffic.service_figures(&stats, &served);
    assert_eq!(figures.len(), 2);
    assert_eq!(figures[&port("web")].counters.requests, 15);
    assert_eq!(figures[&port("web")].servers.get("up"), Some(&2));
    assert_eq!(figures[&port("api")].counters.requests, 7);
}

#[test]
fn server_states_read_as_four() {
    for (status, state) in [
        ("UP", "up"),
        ("UP 1/3", "up"),
        ("no check", "up"),
        ("DOWN", "down"),
        ("DOWN 1/2", "down"),
        ("MAINT", "maint"),
        ("MAINT (resolution)", "maint"),
        ("DRAIN", "drain"),
        ("NOLB", "drain"),
        ("", "down"),
    ] {
        assert_eq!(server_state(status), state, "{status:?}");
    }
}
