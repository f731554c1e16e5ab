//! What HAProxy's backends stand for in the version it serves: the Service
//! port each one serves now, so metrics can name traffic by Kubernetes
//! names, whichever backend (its own or a spare) carries it.

use std::collections::HashMap;

use hawser_plan::{Plan, ServicePort};

/// The served version's backends that serve a Service, by backend name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServedBackends {
    by_backend: HashMap<String, ServedBackend>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedBackend {
    pub service: ServicePort,
    /// A spare of a pool: its counters may still hold what it served for
    /// an earlier Service.
    pub spare: bool,
}

impl ServedBackends {
    pub fn of(plan: &Plan) -> Self {
        let by_backend = plan
            .backends
            .iter()
            .filter_map(|b| {
                let service = b.service.clone()?;
                let spare = b.role.is_spare();
                Some((b.name.clone(), ServedBackend { service, spare }))
            })
            .collect();
        ServedBackends { by_backend }
    }

    /// What backend `name` serves; `None` for a free spare, a backend of
    /// hawser's own, or one the served version does not declare.
    pub fn get(&self, name: &str) -> Option<&ServedBackend> {
        self.by_backend.get(name)
    }
}

#[cfg(test)]
mod tests {
    use hawser_plan::{BackendPlan, BackendRole, Plan, ServicePort};

    use super::ServedBackends;

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
            service: service.map(|s| ServicePort {
                namespace: "app".into(),
                service: s.into(),
                port: "80".into(),
            }),
        }
    }

    #[test]
    fn a_lent_spare_serves_its_service_and_a_free_one_nothing() {
        let lent = BackendRole::Lent {
            name: "be_app_new_80".into(),
            source: String::new(),
        };
        let plan = Plan {
            backends: vec![
                backend("be_app_web_80", BackendRole::Named, Some("web")).into(),
                backend("hawser_spare_plain_0", lent, Some("new")).into(),
                backend("hawser_spare_plain_1", BackendRole::Spare, None).into(),
            ],
            ..Plan::default()
        };
        let served = ServedBackends::of(&plan);
        let own = served.get("be_app_web_80").expect("served");
        assert_eq!((own.service.service.as_str(), own.spare), ("web", false));
        let spare = served.get("hawser_spare_plain_0").expect("lent");
        assert_eq!((spare.service.service.as_str(), spare.spare), ("new", true));
        assert!(served.get("hawser_spare_plain_1").is_none());
        assert!(served.get("hawser_not_found").is_none());
    }
}
