use hawser_model::{ObjectKey, TlsMode};

use super::*;
use crate::gateway::{ListenerTlsEntry, TcpRouteEntry, TlsRouteEntry};

fn settings() -> Settings {
    Settings {
        http_port: 8080,
        https_port: 8443,
        runtime_socket: Some("/state/run/admin.sock".to_string()),
        ..Settings::default()
    }
}

fn service(name: &str, weight: u32) -> WeightedBackend {
    WeightedBackend::to_service(name, 443, weight)
}

fn listener(name: &str, port: u16, protocol: ListenerProtocol) -> ListenerEntry {
    let mut listener = ListenerEntry::new(name, port, protocol);
    listener.tls = (protocol == ListenerProtocol::Tls).then(|| ListenerTlsEntry {
        mode: TlsMode::Passthrough,
        certificates: Vec::new(),
    });
    listener
}

fn tls_route(name: &str, hostname: Option<&str>, backends: Vec<WeightedBackend>) -> TlsRouteEntry {
    TlsRouteEntry {
        route: ObjectKey::new("app", name),
        hostname: hostname.map(str::to_string),
        backends,
        unavailable: false,
    }
}

fn gateway(listeners: Vec<ListenerEntry>) -> Vec<GatewayEntry> {
    vec![GatewayEntry {
        gateway: ObjectKey::new("app", "gw"),
        class_name: "hawser".to_string(),
        listeners,
    }]
}

fn https_frontend(port: u16) -> FrontendView {
    FrontendView {
        name: format!("gw_{port}"),
        port,
        tls: true,
        socket: None,
        rules: Vec::new(),
    }
}

fn streams(
    gateways: &[GatewayEntry],
    own: &mut BTreeMap<u16, FrontendView>,
) -> (Streams, Vec<String>) {
    let mut diags = Diagnostics::default();
    let streams = stream_frontends(gateways, &[], &settings(), own, &mut diags);
    let warnings = diags.finish().into_iter().map(|d| d.message).collect();
    (streams, warnings)
}

fn choices(rule: &StreamRuleView) -> Vec<String> {
    rule.backends
        .iter()
        .map(|c| {
            let when: Vec<String> = c
                .when
                .iter()
                .map(|w| {
                    format!(
                        "{} {} {}",
                        w.fetch,
                        w.matcher,
                        w.value.as_deref().unwrap_or("")
                    )
                })
                .collect();
            format!("{} if [{}]", c.backend, when.join(", "))
        })
        .collect()
}

#[test]
fn tls_on_443_shares_the_https_port_and_hands_the_rest_to_frontend_ingress() {
    let mut any = listener("any", 443, ListenerProtocol::Tls);
    any.tls_routes.push(tls_route(
        "wild",
        Some("*.example.com"),
        vec![service("wild", 1)],
    ));
    let mut exact = listener("exact", 443, ListenerProtocol::Tls);
    exact.hostname = Some("db.example.com".to_string());
    exact.tls_routes.push(tls_route(
        "db",
        Some("db.example.com"),
        vec![service("db", 1)],
    ));
    let (streams, warnings) = streams(&gateway(vec![any, exact]), &mut BTreeMap::new());
    assert!(warnings.is_empty(), "{warnings:?}");
    let [frontend] = streams.frontends.as_slice() else {
        panic!("one frontend: {:?}", streams.frontends)
    };
    assert_eq!(
        (frontend.name.as_str(), frontend.port),
        ("gw_tls_8443", 8443)
    );
    assert!(frontend.sni);
    let socket = "/state/run/https-8443.sock";
    assert_eq!(frontend.terminate.as_deref(), Some(socket));
    assert_eq!(streams.https_socket.as_deref(), Some(socket));
    // The exact name first, though its listener comes second.
    let rules: Vec<Vec<String>> = frontend.rules.iter().map(choices).collect();
    assert_eq!(
        rules,
        vec![
            vec!["be_app_db_443_tcp if [req.ssl_sni,lower -m str db.example.com]".to_string()],
            vec!["be_app_wild_443_tcp if [req.ssl_sni,lower -m end .example.com]".to_string()],
        ]
    );
    assert_eq!(
        streams
            .tcp_backends
            .keys()
            .map(BackendKey::name)
            .collect::<Vec<_>>(),
        ["be_app_db_443", "be_app_wild_443"]
    );
}

#[test]
fn a_tcp_listener_serves_its_oldest_route_with_weights() {
    let mut tcp = listener("tcp", 5432, ListenerProtocol::Tcp);
    tcp.tcp_routes.push(TcpRouteEntry {
        route: ObjectKey::new("app", "first"),
        backends: vec![service("a", 3), service("b", 1), service("off", 0)],
        unavailable: false,
    });
    tcp.tcp_routes.push(TcpRouteEntry {
        route: ObjectKey::new("app", "second"),
        backends: vec![service("c", 1)],
        unavailable: false,
    });
    let (streams, _) = streams(&gateway(vec![tcp]), &mut BTreeMap::new());
    let frontend = &streams.frontends[0];
    assert_eq!(
        (frontend.name.as_str(), frontend.sni),
        ("gw_tcp_5432", false)
    );
    assert_eq!(frontend.terminate, None);
    let [rule] = frontend.rules.as_slice() else {
        panic!("only the oldest route: {:?}", frontend.rules)
    };
    assert_eq!(rule.pick, Some(4));
    let pick = format!("var(sess.gw_pick_{})", rule.id);
    assert_eq!(
        choices(rule),
        [
            format!("be_app_a_443_tcp if [{pick} -m int ge 0, {pick} -m int lt 3]"),
            format!("be_app_b_443_tcp if [{pick} -m int ge 3, {pick} -m int lt 4]"),
        ]
    );
}

#[test]
fn routes_without_a_reachable_backend_are_refused() {
    let mut tls = listener("tls", 9443, ListenerProtocol::Tls);
    let mut gone = tls_route("gone", Some("gone.example.com"), Vec::new());
    gone.unavailable = true;
    tls.tls_routes.push(gone);
    let unresolved = WeightedBackend {
        target: BackendTarget::Unresolved {
            reason: "no grant".to_string(),
        },
        weight: 1,
        filters: Vec::new(),
    };
    tls.tls_routes.push(tls_route(
        "half",
        Some("half.example.com"),
        vec![service("a", 1), unresolved],
    ));
    let (streams, _) = streams(&gateway(vec![tls]), &mut BTreeMap::new());
    let rules = &streams.frontends[0].rules;
    assert_eq!(
        choices(&rules[0]),
        [format!(
            "{REFUSED_BACKEND} if [req.ssl_sni,lower -m str gone.example.com]"
        )]
    );
    assert!(
        choices(&rules[1])[1].starts_with(REFUSED_BACKEND),
        "{:?}",
        rules[1]
    );
}

#[test]
fn a_tls_listener_beside_https_on_its_own_port_moves_https_behind_a_socket() {
    let mut tls = listener("tls", 9443, ListenerProtocol::Tls);
    tls.tls_routes.push(tls_route(
        "db",
        Some("db.example.com"),
        vec![service("db", 1)],
    ));
    let mut own = BTreeMap::from([(9443, https_frontend(9443))]);
    let (streams, warnings) = streams(&gateway(vec![tls]), &mut own);
    assert!(warnings.is_empty(), "{warnings:?}");
    let socket = "/state/run/https-9443.sock";
    assert_eq!(streams.frontends[0].terminate.as_deref(), Some(socket));
    assert_eq!(own[&9443].socket.as_deref(), Some(socket));
    assert_eq!(streams.https_socket, None);
}

#[test]
fn ports_something_else_binds_are_warned_about_not_served() {
    let on_http_port = listener("tcp-http", 8080, ListenerProtocol::Tcp);
    let on_443 = listener("tcp-443", 443, ListenerProtocol::Tcp);
    let beside_http = listener("tls-http", 9080, ListenerProtocol::Tls);
    let tls = listener("tls", 7000, ListenerProtocol::Tls);
    let tcp_on_tls = listener("tcp", 7000, ListenerProtocol::Tcp);
    let mut clear = https_frontend(9080);
    clear.tls = false;
    let mut own = BTreeMap::from([(9080, clear)]);
    let listeners = vec![on_http_port, on_443, beside_http, tls, tcp_on_tls];
    let (streams, warnings) = streams(&gateway(listeners), &mut own);
    assert_eq!(
        streams
            .frontends
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>(),
        ["gw_tls_7000"]
    );
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    let unserved: Vec<&str> = streams
        .unserved
        .iter()
        .map(|u| u.listener.as_str())
        .collect();
    assert_eq!(unserved, ["tcp-http", "tcp-443", "tls-http", "tcp"]);
    for name in ["tcp-http", "tcp-443", "tls-http", "\"tcp\""] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(name) && w.contains("cannot be served")),
            "{name}: {warnings:?}"
        );
    }
}

#[test]
fn without_a_runtime_socket_the_socket_is_in_the_working_directory() {
    let mut settings = settings();
    settings.runtime_socket = None;
    assert_eq!(terminate_socket(&settings, 443), "https-443.sock");
}
