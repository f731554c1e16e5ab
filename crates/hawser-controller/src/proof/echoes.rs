//! The echo backends that stand in for the Services a render uses, and the
//! copy of the store that points those Services at them.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use hawser_echo::{EchoConfig, EchoServer};
use hawser_model::{
    Endpoint, EndpointPort, EndpointSlice, Kind, Object, ObjectKey, ObjectRef, Service,
    ServiceType, Store,
};
use hawser_render::Plan;
use tokio::task::JoinHandle;

use super::ValidationTestError;

/// Where every echo listens.
const ECHO_IP: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The pod name every echo reports.
const ECHO_POD: &str = "hawser-validation-echo";

/// One running echo per used Service; aborted on drop.
#[derive(Debug)]
pub(super) struct EchoBackends {
    /// The port each Service's echo listens on.
    ports: BTreeMap<ObjectKey, u16>,
    tasks: Vec<JoinHandle<()>>,
}

impl EchoBackends {
    /// Starts an echo for every Service of `store` that a backend of `plan` serves.
    pub async fn start(store: &Store, plan: &Plan) -> Result<Self, ValidationTestError> {
        let mut echoes = EchoBackends {
            ports: BTreeMap::new(),
            tasks: Vec::new(),
        };
        let used = store.services().filter(|service| {
            plan.backends
                .iter()
                .any(|b| b.serves_service(&service.key.namespace, &service.key.name))
        });
        for service in used {
            let mut config = EchoConfig::new(SocketAddr::new(ECHO_IP, 0));
            config.namespace = service.key.namespace.clone();
            config.service = service.key.name.clone();
            config.pod = ECHO_POD.to_string();
            let server =
                EchoServer::bind(config)
                    .await
                    .map_err(|source| ValidationTestError::Echo {
                        service: service.key.to_string(),
                        source,
                    })?;
            echoes
                .ports
                .insert(service.key.clone(), server.local_addr().port());
            echoes.tasks.push(tokio::spawn(async move {
                // Serves until aborted; an error only fails the requests
                // that needed it, and they report it.
                let _ = server.run(std::future::pending()).await;
            }));
        }
        Ok(echoes)
    }

    /// A copy of `store` in which every Service with an echo has exactly one
    /// ready endpoint, its echo, on each of its ports. An ExternalName
    /// Service becomes an ordinary one for this.
    pub fn substitute(&self, store: &Store) -> Store {
        let mut served = store.clone();
        for (key, port) in &self.ports {
            let Some(service) = store.service(key) else {
                continue;
            };
            for slice in store.endpoint_slices_for(key) {
                served.remove(&ObjectRef::new(Kind::EndpointSlice, slice.key.clone()));
            }
            if matches!(service.service_type, ServiceType::ExternalName(_)) {
                served.insert(Object::Service(Service {
                    service_type: ServiceType::Endpoints,
                    ..service.clone()
                }));
            }
            served.insert(Object::EndpointSlice(echo_slice(service, *port)));
        }
        served
    }
}

fn echo_slice(service: &Service, port: u16) -> EndpointSlice {
    EndpointSlice {
        key: ObjectKey::new(
            &service.key.namespace,
            format!("{}-{ECHO_POD}", service.key.name),
        ),
        service_name: Some(service.key.name.clone()),
        address_type: "IPv4".to_string(),
        ports: service
            .ports
            .iter()
            .map(|p| EndpointPort {
                name: p.name.clone(),
                port: i32::from(port),
                protocol: "TCP".to_string(),
            })
            .collect(),
        endpoints: vec![Endpoint {
            addresses: vec![ECHO_IP.to_string()],
            ready: true,
            serving: true,
            terminating: false,
            target: None,
        }],
    }
}

impl Drop for EchoBackends {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
