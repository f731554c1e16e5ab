//! TCP services: the ConfigMap the setting `tcpServices` names maps a port
//! to a Service port, in either peer's form:
//!
//! - ingress-nginx's `tcp-services`: `"<port>": "<namespace>/<service>:<port>[:PROXY][:PROXY]"`,
//!   the first `PROXY` decoding the PROXY protocol on the way in, the
//!   second sending it to the pods (its `exposing-tcp-udp-services` guide);
//! - haproxytech's TCP services map: `"<port>": "<namespace>/<service>:<port>[:ssl]"`,
//!   `ssl` terminating TLS on that port (its `--configmap-tcp-services`).
//!
//! Each becomes a `mode tcp` frontend on its port, sending to the `mode
//! tcp` twin of the Service port's backend, whose servers the agent changes
//! at runtime like every backend's. One bad entry is refused alone.

use std::collections::{BTreeMap, BTreeSet};

use hawser_model::{Kind, ObjectKey, ObjectRef, ServicePortRef, Store};
use serde::Serialize;

use crate::backends::BackendKey;
use crate::config::Settings;
use crate::features::ANNOTATION_PREFIX;
use crate::report::Diagnostics;
use crate::validate;

/// One TCP service, as the `ingress/tcp_services.cfg` template reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct TcpServiceView {
    /// `tcp_<port>`.
    pub name: String,
    pub port: u16,
    /// The `mode tcp` backend.
    pub backend: String,
    /// Connections start with a PROXY header (`accept-proxy`).
    pub accept_proxy: bool,
    /// TLS is terminated here, with the certificates of the crt-list.
    pub ssl: bool,
    /// The entry as written, for the `# from:` line.
    pub source: String,
}

/// The TCP services of the ConfigMap `settings.tcp_services` names, and
/// the Service ports they send to (whose `mode tcp` backends the caller
/// makes, named with `tcp_suffix`). `reserved`: ports something else binds.
pub(crate) fn tcp_services(
    store: &Store,
    settings: &Settings,
    reserved: &BTreeSet<u16>,
    tcp_suffix: &str,
    diags: &mut Diagnostics,
) -> (Vec<TcpServiceView>, BTreeMap<BackendKey, ObjectRef>) {
    let mut views = Vec::new();
    let mut backends = BTreeMap::new();
    let Some((namespace, name)) = settings
        .tcp_services
        .as_deref()
        .and_then(|n| n.split_once('/'))
    else {
        return (views, backends);
    };
    let object = ObjectRef::new(Kind::ConfigMap, ObjectKey::new(namespace, name));
    let Some(config_map) = store.config_map(&object.key) else {
        diags.warn(
            &object,
            "settings.tcpServices names it but it does not exist; no TCP service is served",
        );
        return (views, backends);
    };
    for (port, value) in &config_map.data {
        match entry(port, value, reserved) {
            Ok((port, key, accept_proxy, ssl)) => {
                let backend = format!("{}{tcp_suffix}", key.name());
                backends.entry(key).or_insert_with(|| object.clone());
                views.push(TcpServiceView {
                    name: format!("tcp_{port}"),
                    port,
                    backend,
                    accept_proxy,
                    ssl,
                    source: format!("{port}: {value}"),
                });
            }
            Err(why) => diags.reject(
                &object,
                format!("entry {port:?}: {why}; that port is not served"),
            ),
        }
    }
    (views, backends)
}

/// One entry: its port, the Service port it sends to (with the PROXY
/// protocol to the pods as a backend setting), whether connections start
/// with a PROXY header, and whether TLS ends here.
fn entry(
    port: &str,
    value: &str,
    reserved: &BTreeSet<u16>,
) -> Result<(u16, BackendKey, bool, bool), String> {
    const EXPECTED: &str = "\"<namespace>/<service>:<port>\" with :PROXY, :PROXY:PROXY (ingress-nginx) or :ssl (haproxytech) after it";
    let port: u16 = port
        .trim()
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or("the key is not a port number")?;
    if reserved.contains(&port) {
        return Err(format!(
            "port {port} is served already (HTTP, HTTPS, health or a Gateway listener)"
        ));
    }
    let mut parts = value.trim().split(':');
    let (namespace, service) = parts
        .next()
        .and_then(|s| s.split_once('/'))
        .ok_or(EXPECTED)?;
    validate::label_name("namespace", namespace).map_err(|e| e.to_string())?;
    validate::label_name("service", service).map_err(|e| e.to_string())?;
    let service_port = match parts.next().ok_or(EXPECTED)? {
        digits if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            ServicePortRef::Number(digits.parse().map_err(|_| EXPECTED)?)
        }
        name => {
            validate::label_name("service port", name).map_err(|e| e.to_string())?;
            ServicePortRef::Name(name.to_string())
        }
    };
    let rest: Vec<&str> = parts.collect();
    let (accept_proxy, send_proxy, ssl) = match rest.as_slice() {
        [] => (false, false, false),
        ["PROXY"] => (true, false, false),
        ["PROXY", "PROXY"] => (true, true, false),
        ["", "PROXY"] => (false, true, false),
        ["ssl"] => (false, false, true),
        _ => return Err(EXPECTED.to_string()),
    };
    let mut overrides = BTreeMap::new();
    if send_proxy {
        overrides.insert(
            format!("{ANNOTATION_PREFIX}send-proxy-protocol"),
            "v1".to_string(),
        );
    }
    let key = BackendKey {
        namespace: namespace.to_string(),
        service: service.to_string(),
        port: service_port,
        overrides,
    };
    key.validate()?;
    Ok((port, key, accept_proxy, ssl))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn both_peers_forms_are_read() {
        let reserved = BTreeSet::from([80, 443]);
        let (port, key, accept, ssl) = entry("9000", "db/pg:5432", &reserved).unwrap();
        assert_eq!((port, accept, ssl), (9000, false, false));
        assert_eq!(key.name(), "be_db_pg_5432");
        let (_, key, accept, _) = entry("9001", "db/pg:5432:PROXY:PROXY", &reserved).unwrap();
        assert!(accept);
        assert!(
            key.name().starts_with("be_db_pg_5432_v"),
            "sends PROXY: a backend of its own"
        );
        let (_, _, accept, _) = entry("9002", "db/pg:5432::PROXY", &reserved).unwrap();
        assert!(!accept);
        let (_, key, _, ssl) = entry("9003", "ldap/ldap:ldaps:ssl", &reserved).unwrap();
        assert!(ssl);
        assert_eq!(key.port, ServicePortRef::Name("ldaps".to_string()));
    }

    #[test]
    fn a_bad_entry_says_why() {
        let reserved = BTreeSet::from([80, 443]);
        for (port, value, why) in [
            ("x", "db/pg:5432", "not a port"),
            ("80", "db/pg:5432", "served already"),
            ("9000", "pg:5432", "<namespace>/<service>"),
            ("9000", "db/pg:5432:TLS", "<namespace>/<service>"),
            ("9000", "db/pg\nbind :1:5432", "service"),
        ] {
            let error = entry(port, value, &reserved).unwrap_err();
            assert!(error.contains(why), "{value:?}: {error}");
        }
    }
}
