//! `plan.backends` as templates see it, read where a template reads it.
//!
//! Serialized ahead, the backends were most of the template context: a map
//! per backend and per server, a copy of every string, all made before the
//! templates ran and freed after them, tens of thousands of allocations in a
//! large cluster. These objects hold the plans (shared, not copied) and make
//! a field's value when a template reads it.
//!
//! Templates see the same values as before, field by field: what serde
//! writes of a plan (the same names, in the same order, the same fields
//! left out when serde leaves them out, strings as strings, integers as
//! integers, `none` for an absent option). Nested types other than strings
//! and integers are still given through serde. The template tests render
//! every library template through these objects; a test below compares them
//! with the serialized plans, field by field, for every kind of backend.

use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};

use hawser_plan::{BackendPlan, ServerPlan, ServerState};
use minijinja::value::{Enumerator, Object, ObjectRepr, Serde, Value};

/// The plan's backends, a sequence of [`LazyBackend`]s.
#[derive(Debug)]
pub(super) struct LazyBackends(pub(super) Vec<Arc<BackendPlan>>);

impl Object for LazyBackends {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let backend = self.0.get(key.as_usize()?)?;
        Some(Value::from_object(LazyBackend(Arc::clone(backend))))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.len())
    }
}

/// One backend: the fields of [`BackendPlan`], in serde's order.
#[derive(Debug)]
struct LazyBackend(Arc<BackendPlan>);

/// Every field of a backend, in the order serde writes them.
const BACKEND_FIELDS: &[&str] = &[
    "name",
    "source",
    "balance",
    "timeout_server",
    "timeout_connect",
    "servers",
    "mode",
    "cookie",
    "role",
    "service",
];

impl Object for LazyBackend {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        let backend = &self.0;
        Some(match key {
            "name" => Value::from(backend.name.as_str()),
            "source" => Value::from(backend.source.as_str()),
            "balance" => Value::from(backend.balance.as_str()),
            "timeout_server" => Value::from(backend.timeout_server.as_deref()),
            "timeout_connect" => Value::from(backend.timeout_connect.as_deref()),
            "servers" => Value::from_object(LazyServers(Arc::clone(backend))),
            "mode" => Value::from(Serde(&backend.mode)),
            "cookie" => Value::from(backend.cookie.as_deref()),
            // Left out by serde when it says nothing.
            "role" if !backend.role.is_named() => Value::from(Serde(&backend.role)),
            "service" => Value::from(Serde(backend.service.as_ref()?)),
            _ => return None,
        })
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let backend = &self.0;
        let fields = BACKEND_FIELDS.iter().copied();
        let present = fields.filter(|field| match *field {
            "role" => !backend.role.is_named(),
            "service" => backend.service.is_some(),
            _ => true,
        });
        Enumerator::Values(present.map(Value::from).collect())
    }
}

/// A backend's servers, a sequence of [`LazyServer`]s.
#[derive(Debug)]
struct LazyServers(Arc<BackendPlan>);

impl Object for LazyServers {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let index = key.as_usize().filter(|at| *at < self.0.servers.len())?;
        Some(Value::from_object(LazyServer {
            backend: Arc::clone(&self.0),
            index,
        }))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.servers.len())
    }
}

/// One server: the fields of [`ServerPlan`], in serde's order.
#[derive(Debug)]
struct LazyServer {
    backend: Arc<BackendPlan>,
    index: usize,
}

/// The keywords of a server that has none, made once.
static NO_KEYWORDS: LazyLock<Value> = LazyLock::new(|| Value::from(Vec::<Value>::new()));

/// Every field of a server, in the order serde writes them.
const SERVER_FIELDS: &[&str] = &[
    "name", "address", "port", "weight", "state", "resolve", "proto", "keywords",
];

impl LazyServer {
    fn server(&self) -> &ServerPlan {
        &self.backend.servers[self.index]
    }
}

impl Object for LazyServer {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        let server = self.server();
        Some(match key {
            "name" => Value::from(server.name.as_str()),
            "address" => Value::from(server.address.as_str()),
            "port" => Value::from(server.port),
            "weight" => Value::from(server.weight),
            "state" => Value::from(match server.state {
                ServerState::Ready => "ready",
                ServerState::Maintenance => "maintenance",
            }),
            "resolve" => Value::from(server.resolve),
            "proto" => Value::from(server.proto.as_deref()),
            // Most servers have none, and every one is read.
            "keywords" if server.keywords.is_empty() => NO_KEYWORDS.clone(),
            "keywords" => Value::from(Serde(&server.keywords)),
            // Not a field of the plan: made from the fields above.
            "line" => Value::from(server_line(server)),
            _ => return None,
        })
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Str(SERVER_FIELDS)
    }
}

/// The server's line in haproxy.cfg, made from its fields in one go:
///
/// ```text
/// server <name> <address>:<port> weight <weight> [init-addr last,libc,none] [proto <proto>] [<keywords>…] [disabled]
/// ```
///
/// An IPv6 address is in brackets (the `address` filter). A backend's
/// server lines were most of the templates' work in a large haproxy.cfg,
/// written field by field (eight values looked up, each one checked as it
/// was written); the library writes this line instead. Its words after
/// the address are the ones `add server` is given (weight, protocol,
/// keywords), so a server added at runtime is the one a reload declares.
fn server_line(server: &ServerPlan) -> String {
    let mut line = String::with_capacity(64 + server.name.len() + server.address.len());
    line.push_str("server ");
    line.push_str(&server.name);
    line.push(' ');
    if server.address.contains(':') {
        line.push('[');
        line.push_str(&server.address);
        line.push(']');
    } else {
        line.push_str(&server.address);
    }
    // Writing to a String cannot fail.
    let _ = write!(line, ":{} weight {}", server.port, server.weight);
    if server.resolve {
        line.push_str(" init-addr last,libc,none");
    }
    if let Some(proto) = &server.proto {
        line.push_str(" proto ");
        line.push_str(proto);
    }
    for keyword in &server.keywords {
        line.push(' ');
        line.push_str(keyword);
    }
    if server.state == ServerState::Maintenance {
        line.push_str(" disabled");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use hawser_plan::{BackendMode, BackendRole, ServicePort};

    fn server(
        name: &str,
        state: ServerState,
        proto: Option<&str>,
        keywords: &[&str],
    ) -> ServerPlan {
        ServerPlan {
            name: name.to_string(),
            address: "10.0.0.1".to_string(),
            port: 8080,
            weight: 3,
            state,
            resolve: proto.is_none(),
            proto: proto.map(str::to_string),
            keywords: keywords.iter().map(|k| k.to_string()).collect(),
        }
    }

    /// Backends with every field set and with every optional field left
    /// out, of every role.
    fn backends() -> Vec<Arc<BackendPlan>> {
        let full = BackendPlan {
            name: "be_team_a-service-with-a-long-name_http".to_string(),
            source: "Service team/a-service-with-a-long-name port http".to_string(),
            balance: "leastconn".to_string(),
            timeout_server: Some("30s".to_string()),
            timeout_connect: Some("5s".to_string()),
            servers: vec![
                server(
                    "ep_10.0.0.1_8080",
                    ServerState::Ready,
                    Some("h2"),
                    &["ssl", "verify", "none"],
                ),
                server("ep_10.0.0.2_8080", ServerState::Maintenance, None, &[]),
            ],
            mode: BackendMode::Tcp,
            cookie: Some("SERVERID insert indirect nocache".to_string()),
            role: BackendRole::Lent {
                name: "be_team_web_http".to_string(),
                source: "Service team/web port http".to_string(),
            },
            service: Some(ServicePort {
                namespace: "team".to_string(),
                service: "web".to_string(),
                port: "http".to_string(),
            }),
        };
        let bare = BackendPlan {
            name: "be_spare_1".to_string(),
            source: String::new(),
            balance: "roundrobin".to_string(),
            timeout_server: None,
            timeout_connect: None,
            servers: Vec::new(),
            mode: BackendMode::Http,
            cookie: None,
            role: BackendRole::Named,
            service: None,
        };
        let roles = [
            BackendRole::Retired,
            BackendRole::Spare,
            BackendRole::Released,
        ];
        let mut all = vec![Arc::new(full), Arc::new(bare.clone())];
        all.extend(roles.into_iter().map(|role| {
            Arc::new(BackendPlan {
                role,
                ..bare.clone()
            })
        }));
        all
    }

    /// What a template sees of `value`, written out whole: every key, in
    /// order, and every value, nested.
    fn seen(value: &Value) -> serde_json::Value {
        serde_json::to_value(value).expect("a template value serializes")
    }

    #[test]
    fn templates_see_the_backends_as_serde_writes_them() {
        let backends = backends();
        let lazy = Value::from_object(LazyBackends(backends.clone()));
        let serialized = Value::from(Serde(&backends));
        assert_eq!(seen(&lazy), seen(&serialized));
        assert_eq!(lazy.to_string(), serialized.to_string());
        assert_eq!(format!("{lazy:?}"), format!("{serialized:?}"));
        assert_eq!(
            seen(&lazy),
            serde_json::to_value(&backends).expect("plans serialize")
        );
    }

    #[test]
    fn templates_read_each_field_as_serde_writes_it() {
        let backends = backends();
        let lazy = Value::from_object(LazyBackends(backends.clone()));
        let serialized = Value::from(Serde(&backends));
        let env = minijinja::Environment::new();
        let expressions = [
            "backends | length",
            "backends[0].servers | length",
            "backends[0].servers[0].port + 1",
            "backends[0].servers[1].state == 'maintenance'",
            "backends[0].servers[0].keywords | join(' ')",
            "backends[1].servers | length",
            "backends[1].timeout_server is none",
            "backends[1].role is undefined",
            "backends[1].service is undefined",
            "backends[2].role.kind",
            "backends[0].role.name",
            "backends[0].service.port",
            "backends[0].mode == 'tcp'",
            "backends[0].missing is undefined",
            "backends[0].servers[2] is undefined",
            "backends[9] is undefined",
            "backends[0] | list",
            "backends[0].servers[0] | list",
            "backends[-1].role.kind",
        ];
        for expression in expressions {
            let expression = env.compile_expression(expression).expect(expression);
            let of = |backends: &Value| {
                expression
                    .eval(minijinja::context! { backends => backends.clone() })
                    .map(|value| value.to_string())
                    .map_err(|e| e.to_string())
            };
            assert_eq!(of(&lazy), of(&serialized), "{expression:?}");
        }
    }

    /// A server's line as the library wrote it before `line`, field by field.
    const LINE_BY_FIELDS: &str = concat!(
        "server {{ server.name }} {{ server.address | address }}:{{ server.port }} weight {{ server.weight }}",
        "{% if server.resolve %} init-addr last,libc,none{% endif %}",
        "{% if server.proto %} proto {{ server.proto }}{% endif %}",
        "{% if server.keywords %} {{ server.keywords | join(' ') }}{% endif %}",
        "{% if server.state == 'maintenance' %} disabled{% endif %}",
    );

    #[test]
    fn a_servers_line_is_the_one_its_fields_write() {
        let mut env = crate::engine::environment(&crate::config::TemplateConfig::default())
            .expect("the library environment");
        env.add_template("by_fields", LINE_BY_FIELDS)
            .expect("the template compiles");
        env.add_template("line", "{{ server.line }}")
            .expect("the template compiles");
        let mut servers: Vec<ServerPlan> = backends()
            .iter()
            .flat_map(|backend| backend.servers.clone())
            .collect();
        let v6 = ServerPlan {
            address: "fd00::1:2".to_string(),
            ..server("ep_v6", ServerState::Ready, None, &["send-proxy-v2"])
        };
        let plain = ServerPlan {
            resolve: false,
            ..server("ep_plain", ServerState::Ready, None, &[])
        };
        let named = ServerPlan {
            address: "db.example.com".to_string(),
            ..server(
                "ep_named",
                ServerState::Maintenance,
                None,
                &["ssl", "sni", "str(db)"],
            )
        };
        servers.extend([v6, plain, named]);
        let backend = Arc::new(BackendPlan {
            servers,
            ..(*backends()[0]).clone()
        });
        for index in 0..backend.servers.len() {
            let server = Value::from_object(LazyServer {
                backend: Arc::clone(&backend),
                index,
            });
            let render = |name: &str| {
                let template = env.get_template(name).expect("added above");
                template
                    .render(minijinja::context! { server => server.clone() })
                    .expect("renders")
            };
            assert_eq!(
                render("line"),
                render("by_fields"),
                "{:?}",
                backend.servers[index]
            );
        }
    }
}
