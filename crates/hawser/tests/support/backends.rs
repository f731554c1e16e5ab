//! Echo backends: one `hawser echo` process per pod, each on its own
//! 127.0.0.x address (Linux routes all of 127/8 to the loopback interface).
//!
//! The pods of one Service share a port, because an EndpointSlice gives one
//! port list for all its endpoints: the first pod listens on port 0 and
//! reports the port it got, the others take the same port on their address.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU8, Ordering};

use super::process::{ChildGuard, hawser_command};
use super::{TestCertificate, Vars};

/// How many times a Service's pods are started afresh when one cannot bind.
const BIND_ATTEMPTS: usize = 5;

/// The next loopback address for a pod; 127.0.0.1 stays HAProxy's.
static NEXT_HOST: AtomicU8 = AtomicU8::new(2);

fn next_address() -> Ipv4Addr {
    let host = NEXT_HOST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
            Some(if h >= 254 { 2 } else { h + 1 })
        })
        .expect("always Some");
    Ipv4Addr::new(127, 0, 0, host)
}

/// A pod of a Service, as an echo backend reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    pub namespace: String,
    pub service: String,
    pub name: String,
    /// Serves over TLS with this certificate and key (PEM) when set.
    pub tls: Option<(String, String)>,
}

/// `pod("shop", "web", "web-a")`: pod `web-a` of Service `shop/web`.
pub fn pod(namespace: &str, service: &str, name: &str) -> Pod {
    Pod {
        namespace: namespace.to_string(),
        service: service.to_string(),
        name: name.to_string(),
        tls: None,
    }
}

impl Pod {
    /// The pod serves over TLS with `certificate`.
    pub fn with_tls(mut self, certificate: &TestCertificate) -> Pod {
        self.tls = Some((certificate.cert_pem.clone(), certificate.key_pem.clone()));
        self
    }
}

/// One running echo backend.
#[derive(Debug)]
pub struct Echo {
    pub pod: Pod,
    pub addr: SocketAddr,
    process: ChildGuard,
    /// Holds the certificate and key files of a TLS pod.
    _tls_files: Option<tempfile::TempDir>,
}

impl Echo {
    /// What the echo server logged so far: a line for each request it answered.
    pub fn output(&self) -> String {
        self.process.output()
    }
}

impl Echo {
    /// Starts `hawser echo` on `listen` and waits until it listens; `Err`
    /// with its output when it exits first (its port was taken).
    fn start(pod: &Pod, listen: SocketAddr) -> Result<Echo, String> {
        let mut command = hawser_command(["echo"]);
        command
            .arg("--listen")
            .arg(listen.to_string())
            .args(["--namespace", &pod.namespace])
            .args(["--service", &pod.service])
            .args(["--pod", &pod.name]);
        let tls_files = pod.tls.as_ref().map(|(cert, key)| {
            let dir = tempfile::tempdir().expect("a directory for the pod's certificate");
            std::fs::write(dir.path().join("tls.crt"), cert).expect("write the certificate");
            std::fs::write(dir.path().join("tls.key"), key).expect("write the key");
            command
                .arg("--tls-cert")
                .arg(dir.path().join("tls.crt"))
                .arg("--tls-key")
                .arg(dir.path().join("tls.key"));
            dir
        });
        let process = ChildGuard::spawn(format!("echo {}", pod.name), &mut command);
        let line = process.next_stdout_line().unwrap_or_default();
        let addr = line
            .strip_prefix("echo listening on ")
            .and_then(|addr| addr.trim().parse::<SocketAddr>().ok());
        match addr {
            Some(addr) => Ok(Echo {
                pod: pod.clone(),
                addr,
                process,
                _tls_files: tls_files,
            }),
            None => Err(format!(
                "echo {} on {listen} did not start:\n{}",
                pod.name,
                process.output()
            )),
        }
    }
}

/// The echo backends of a test, and the fixture variables naming them.
#[derive(Debug)]
pub struct Backends {
    echos: Vec<Echo>,
}

impl Backends {
    /// Starts one echo backend per pod, the pods of a Service on one port.
    pub fn start(pods: &[Pod]) -> Backends {
        let mut services: BTreeMap<(&str, &str), Vec<&Pod>> = BTreeMap::new();
        for pod in pods {
            services
                .entry((&pod.namespace, &pod.service))
                .or_default()
                .push(pod);
        }
        let mut echos = Vec::new();
        for ((namespace, service), pods) in services {
            let mut failures = Vec::new();
            let started = (0..BIND_ATTEMPTS).find_map(|_| match start_service(&pods) {
                Ok(started) => Some(started),
                Err(failure) => {
                    failures.push(failure);
                    None
                }
            });
            match started {
                Some(started) => echos.extend(started),
                None => panic!(
                    "cannot start the pods of Service {namespace}/{service}:\n{}",
                    failures.join("\n")
                ),
            }
        }
        Backends { echos }
    }

    pub fn echos(&self) -> &[Echo] {
        &self.echos
    }

    /// The echo backend of pod `name`.
    pub fn pod(&self, name: &str) -> &Echo {
        self.echos
            .iter()
            .find(|e| e.pod.name == name)
            .unwrap_or_else(|| panic!("no echo backend for pod {name}"))
    }

    /// `<SERVICE>_PORT` for each Service and `<POD>_ADDR` for each pod, names
    /// upper-cased with `-` as `_`: what fixture EndpointSlices refer to.
    pub fn vars(&self) -> Vars {
        let mut vars = Vars::new();
        for echo in &self.echos {
            let port = echo.addr.port().to_string();
            let service_var = format!("{}_PORT", var_name(&echo.pod.service));
            if let Some(other) = vars.insert(service_var.clone(), port.clone())
                && other != port
            {
                panic!("two Services make the fixture variable {service_var}");
            }
            let pod_var = format!("{}_ADDR", var_name(&echo.pod.name));
            let previous = vars.insert(pod_var.clone(), echo.addr.ip().to_string());
            assert!(
                previous.is_none(),
                "two pods make the fixture variable {pod_var}"
            );
        }
        vars
    }
}

/// The pods of one Service, on one port; all or nothing.
fn start_service(pods: &[&Pod]) -> Result<Vec<Echo>, String> {
    let mut echos: Vec<Echo> = Vec::new();
    for pod in pods {
        let port = echos.first().map_or(0, |first| first.addr.port());
        echos.push(Echo::start(pod, SocketAddr::from((next_address(), port)))?);
    }
    Ok(echos)
}

fn var_name(name: &str) -> String {
    name.to_ascii_uppercase().replace('-', "_")
}
