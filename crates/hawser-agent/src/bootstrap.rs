//! The configuration HAProxy serves before the first real one: it opens the
//! runtime API and answers 503 on the health listener, so nothing reports
//! ready before a rendered, verified configuration is serving.

use std::net::SocketAddr;

use hawser_plan::{FileKind, FileSet, Generation, Plan};

use crate::paths::AgentPaths;

/// Generation 0 is always the bootstrap configuration.
pub const BOOTSTRAP_GENERATION: Generation = Generation::BOOTSTRAP;

pub fn bootstrap(paths: &AgentPaths, health: Option<SocketAddr>) -> (FileSet, Plan) {
    let mut config = format!(
        "# bootstrap configuration written by the hawser agent: no routes yet\n\
         global\n  stats socket {} mode 600 level admin\n\
         defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n",
        paths.runtime_socket().display()
    );
    if let Some(health) = health {
        config.push_str(&format!(
            "frontend hawser_health\n  bind {health}\n  \
             http-request return status 503 content-type text/plain string \"no configuration yet\"\n"
        ));
    }
    let mut files = FileSet::default();
    files.insert("haproxy.cfg", FileKind::Config, config);
    let plan = Plan {
        structure_digest: "bootstrap".to_string(),
        ..Plan::default()
    };
    (files, plan)
}
