//! The structure digest: haproxy.cfg as a reload sees it, less what the
//! runtime API changes without one.
//!
//! It is taken of the haproxy.cfg just rendered, so a render runs the
//! templates once. Left out: comments and blank lines (HAProxy ignores
//! them; a lent spare's `# from:` mark names its Service there), and the
//! `server` line of every server the plan declares, in the backend the
//! plan declares it in (the agent compares those servers by the plan, and
//! changes them at runtime). Every other line counts, so a template that
//! writes anything else from a server (a count, a line of its own) changes
//! the digest with it, and a change of it takes a reload.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use hawser_plan::{BackendPlan, ServerPlan};

/// Whether `keyword` opens a section of haproxy.cfg.
fn opens_a_section(keyword: &str) -> bool {
    matches!(
        keyword,
        "backend"
            | "cache"
            | "crt-store"
            | "defaults"
            | "fcgi-app"
            | "frontend"
            | "global"
            | "http-errors"
            | "listen"
            | "log-forward"
            | "mailers"
            | "peers"
            | "program"
            | "resolvers"
            | "ring"
            | "traces"
            | "userlist"
    )
}

/// SHA-256, hex, of `config` without comments, blank lines and the server
/// lines of `backends`' servers.
pub(super) fn structure_digest(config: &str, backends: &[Arc<BackendPlan>]) -> String {
    let mut declared = Declared { backends, next: 0 };
    let mut servers: &[ServerPlan] = &[];
    let mut hasher = Sha256::new();
    for line in config.lines() {
        // Words as HAProxy splits them: at ASCII blanks.
        let mut words = line.split_ascii_whitespace();
        let Some(first) = words.next() else { continue };
        if first.starts_with('#') {
            continue;
        }
        if first == "server" {
            let declared_here = words.next().is_some_and(|server| {
                servers
                    .binary_search_by(|s| s.name.as_str().cmp(server))
                    .is_ok()
            });
            if declared_here {
                continue;
            }
        } else if opens_a_section(first) {
            servers = match (first, words.next()) {
                ("backend", Some(name)) => declared.servers_of(name),
                _ => &[],
            };
        }
        hasher.update(line.trim_end().as_bytes());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

/// The backends the plan declares (sorted by name), looked up in the order
/// haproxy.cfg declares them, which is theirs in the library templates.
struct Declared<'a> {
    backends: &'a [Arc<BackendPlan>],
    /// Where the last one found was, plus one.
    next: usize,
}

impl<'a> Declared<'a> {
    /// The servers the plan declares in backend `name` (sorted by name).
    fn servers_of(&mut self, name: &str) -> &'a [ServerPlan] {
        let at = match self.backends.get(self.next) {
            Some(next) if next.name == name => Some(self.next),
            _ => (self.backends)
                .binary_search_by(|b| b.name.as_str().cmp(name))
                .ok(),
        };
        let Some(at) = at else { return &[] };
        self.next = at + 1;
        &self.backends[at].servers
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hawser_plan::{BackendPlan, ServerPlan, ServerState};

    use super::structure_digest;

    fn backend(name: &str, servers: &[&str]) -> Arc<BackendPlan> {
        Arc::new(BackendPlan {
            name: name.into(),
            source: format!("Service {name}"),
            balance: "roundrobin".into(),
            timeout_server: None,
            timeout_connect: None,
            servers: servers
                .iter()
                .map(|s| ServerPlan {
                    name: (*s).into(),
                    address: "10.0.0.1".into(),
                    port: 80,
                    weight: 1,
                    state: ServerState::Ready,
                    resolve: false,
                    proto: None,
                    keywords: Vec::new(),
                })
                .collect(),
            mode: Default::default(),
            cookie: None,
            role: Default::default(),
            service: None,
        })
    }

    const BASE: &str = "global\n  maxconn 100\nbackend be_a\n  balance roundrobin\n";

    #[test]
    fn servers_of_the_plan_comments_and_blank_lines_do_not_count() {
        let with = backend("be_a", &["s1", "s2"]);
        let a = format!(
            "# from: one\n{BASE}  server s1 10.0.0.1:80 weight 1\n\n  server s2 10.0.0.2:80 weight 1 disabled\n"
        );
        let b = format!("# from: another\n{BASE}\n");
        assert_eq!(
            structure_digest(&a, std::slice::from_ref(&with)),
            structure_digest(&b, &[backend("be_a", &[])]),
        );
    }

    #[test]
    fn every_other_line_counts() {
        let plan = [backend("be_a", &["s1"])];
        let digest = |extra: &str| structure_digest(&format!("{BASE}{extra}"), &plan);
        let plain = digest("  server s1 10.0.0.1:80\n");
        // A server the plan does not declare (the template's own).
        assert_ne!(
            plain,
            digest("  server s1 10.0.0.1:80\n  server backup 10.9.9.9:80\n")
        );
        // Any other line, inline comments included.
        assert_ne!(plain, digest("  server s1 10.0.0.1:80\n  retries 3\n"));
        assert_ne!(
            plain,
            digest("  server s1 10.0.0.1:80\n  retries 3 # three\n")
        );
    }

    #[test]
    fn a_server_counts_in_a_section_the_plan_does_not_declare_it_in() {
        let plan = [backend("be_a", &["s1"])];
        let in_backend = format!("{BASE}  server s1 10.0.0.1:80\n");
        let elsewhere = format!("{BASE}listen other\n  server s1 10.0.0.1:80\n");
        assert_ne!(
            structure_digest(&in_backend, &plan),
            structure_digest(&elsewhere, &plan),
        );
        let in_other_backend = format!("{BASE}backend be_b\n  server s1 10.0.0.1:80\n");
        assert_ne!(
            structure_digest(&format!("{BASE}backend be_b\n"), &plan),
            structure_digest(&in_other_backend, &plan),
        );
    }
}
