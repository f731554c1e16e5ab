//! Runtime first: what it takes to go from the version HAProxy runs to the
//! desired one, decided from the two plans and file digests alone (never by
//! parsing HAProxy text).
//!
//! | change                                        | applied by            |
//! |-----------------------------------------------|-----------------------|
//! | server added, removed, readdressed, reweighted, put in or out of maintenance | runtime API |
//! | map content                                   | runtime API (entry by entry in a `str` or `beg` map, else an atomic replace; see [`map_edits`]) |
//! | certificate content                           | runtime API (SSL transaction) |
//! | certificate added to / removed from the crt-list | runtime API        |
//! | anything else in haproxy.cfg (its structure digest), the default certificate's place, a DNS-named server, a map or file appearing or going, anything not understood | reload |
//!
//! Runtime operations are ordered so that nothing refers to what does not
//! exist yet: certificates and servers are added before maps route to them,
//! and removed after; what a route entry names is in its map before the
//! route, and leaves it after.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

mod map_edits;

use map_edits::map_ops;
pub(crate) use map_edits::{TwinStep, twin_steps};

use hawser_plan::{BackendPlan, CrtListEntry, FileKind, FileSet, Plan, ServerPlan, ServerState};

/// One version as the diff sees it.
#[derive(Debug, Clone, Copy)]
pub struct VersionView<'a> {
    pub plan: &'a Plan,
    pub files: &'a FileSet,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing HAProxy serves differs.
    NoOp,
    /// Apply these operations in order; no reload.
    Runtime(Vec<RuntimeOp>),
    /// Reload, for these reasons (the first few, for logs and status).
    Reload(Vec<String>),
}

/// A change the runtime API can make. File contents are taken from the
/// desired version's file set by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeOp {
    /// `new ssl cert` + `set`/`commit`, then `add ssl crt-list` with its SNI names.
    AddCertificate {
        path: String,
        crt_list: String,
        sni: Vec<String>,
    },
    /// `set ssl cert` + `commit ssl cert`.
    UpdateCertificate {
        path: String,
    },
    AddServer {
        backend: String,
        server: ServerPlan,
    },
    SetServerAddress {
        backend: String,
        server: String,
        address: String,
        port: u16,
    },
    SetServerWeight {
        backend: String,
        server: String,
        weight: u16,
    },
    SetServerState {
        backend: String,
        server: String,
        state: ServerState,
    },
    /// `prepare map` → `add map @v` → count check → `commit map @v`.
    ReplaceMap {
        path: String,
    },
    /// `add map`, `set map` or `del map` of one entry (see [`map_edits`]).
    EditMap {
        path: String,
        edit: MapEdit,
    },
    /// `edits` in the copy of a twinned map requests do not read (`path` or
    /// `twin`, as `live_twins.map` says), then `set map` of
    /// `live_twins.map` naming that copy, then `edits` in the other copy
    /// (see [`map_edits`]).
    EditTwinMap {
        path: String,
        twin: String,
        edits: Vec<MapEdit>,
    },
    /// maint → `wait srv-removable` → `del server`.
    RemoveServer {
        backend: String,
        server: String,
    },
    /// `del ssl crt-list`, then `del ssl cert`.
    RemoveCertificate {
        path: String,
        crt_list: String,
    },
}

/// One entry of a map changed at runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapEdit {
    Add { key: String, value: String },
    Set { key: String, value: String },
    Del { key: String },
}

impl RuntimeOp {
    /// The backend whose servers the operation changes.
    pub fn backend(&self) -> Option<&str> {
        match self {
            RuntimeOp::AddServer { backend, .. }
            | RuntimeOp::SetServerAddress { backend, .. }
            | RuntimeOp::SetServerWeight { backend, .. }
            | RuntimeOp::SetServerState { backend, .. }
            | RuntimeOp::RemoveServer { backend, .. } => Some(backend),
            _ => None,
        }
    }
}

const MAX_REASONS: usize = 8;

/// Decides how to move HAProxy from `running` to `desired`.
pub fn decide(running: VersionView<'_>, desired: VersionView<'_>) -> Decision {
    let mut reasons = Vec::new();
    if running.plan.structure_digest != desired.plan.structure_digest {
        reasons.push("haproxy.cfg changed beyond its servers".to_string());
    }
    let (cert_adds, cert_removes) = diff_crt_lists(running.plan, desired.plan, &mut reasons);
    let (cert_updates, changed_maps) = diff_files(
        running.files,
        desired.files,
        &cert_adds,
        &cert_removes,
        &mut reasons,
    );
    spares_changing_hands(running.plan, desired.plan, &mut reasons);
    let (server_adds_and_changes, server_removes) =
        diff_backends(&running.plan.backends, &desired.plan.backends, &mut reasons);

    if !reasons.is_empty() {
        reasons.truncate(MAX_REASONS);
        return Decision::Reload(reasons);
    }
    let maps = map_ops(changed_maps, running.plan, desired.plan);
    let ordered: Vec<RuntimeOp> = cert_adds
        .into_values()
        .chain(cert_updates)
        .chain(server_adds_and_changes)
        .chain(maps.first)
        .chain(maps.last)
        .chain(server_removes)
        .chain(cert_removes.into_values())
        .collect();
    if ordered.is_empty() {
        Decision::NoOp
    } else {
        Decision::Runtime(ordered)
    }
}

type CertOps = BTreeMap<String, RuntimeOp>;

/// Crt-list membership: entries may come and go at runtime, except the
/// first (the default certificate), and a certificate listed more than once
/// is left to a reload.
fn diff_crt_lists(running: &Plan, desired: &Plan, reasons: &mut Vec<String>) -> (CertOps, CertOps) {
    let mut adds = CertOps::new();
    let mut removes = CertOps::new();
    let lists = |plan: &Plan| -> BTreeMap<String, Vec<CrtListEntry>> {
        plan.crt_lists
            .iter()
            .map(|l| (l.path.clone(), l.entries.clone()))
            .collect()
    };
    let (old_lists, new_lists) = (lists(running), lists(desired));
    if old_lists.keys().ne(new_lists.keys()) {
        reasons.push("the set of crt-lists changed".to_string());
        return (adds, removes);
    }
    for (path, new) in &new_lists {
        let old = &old_lists[path];
        if old == new {
            continue;
        }
        if old.first() != new.first() {
            reasons.push(format!("the default certificate of {path} changed"));
            continue;
        }
        type Line = (Vec<String>, Vec<String>);
        let by_cert = |entries: &[CrtListEntry]| -> Option<BTreeMap<String, Line>> {
            let mut map = BTreeMap::new();
            for e in entries.iter().skip(1) {
                let line = (e.sni.clone(), e.options.clone());
                if map.insert(e.certificate.clone(), line).is_some() {
                    return None;
                }
            }
            Some(map)
        };
        let (Some(old), Some(new)) = (by_cert(old), by_cert(new)) else {
            reasons.push(format!("{path} lists a certificate more than once"));
            continue;
        };
        for (cert, (sni, options)) in &new {
            match old.get(cert) {
                // Its CA file is not loaded yet: only a reload can add it.
                None if !options.is_empty() => {
                    reasons.push(format!("{cert} in {path} asks for client certificates"));
                }
                None => {
                    let op = RuntimeOp::AddCertificate {
                        path: cert.clone(),
                        crt_list: path.clone(),
                        sni: sni.clone(),
                    };
                    adds.insert(cert.clone(), op);
                }
                Some((old_sni, _)) if old_sni != sni => {
                    reasons.push(format!("SNI names of {cert} in {path} changed"));
                }
                Some((_, old_options)) if old_options != options => {
                    reasons.push(format!("the options of {cert} in {path} changed"));
                }
                Some(_) => {}
            }
        }
        for cert in old.keys().filter(|c| !new.contains_key(*c)) {
            let op = RuntimeOp::RemoveCertificate {
                path: cert.clone(),
                crt_list: path.clone(),
            };
            removes.insert(cert.clone(), op);
        }
    }
    (adds, removes)
}

fn diff_files(
    running: &FileSet,
    desired: &FileSet,
    cert_adds: &CertOps,
    cert_removes: &CertOps,
    reasons: &mut Vec<String>,
) -> (Vec<RuntimeOp>, Vec<String>) {
    let mut cert_updates = Vec::new();
    let mut changed_maps = Vec::new();
    let paths: BTreeSet<&str> = running
        .iter()
        .chain(desired.iter())
        .map(|(p, _)| p)
        .collect();
    for path in paths {
        match (running.get(path), desired.get(path)) {
            (Some(old), Some(new)) if old == new => {}
            (Some(old), Some(new)) if old.kind != new.kind => {
                reasons.push(format!("{path} changed kind"));
            }
            (Some(_), Some(new)) => match new.kind {
                // The config's runtime-capable part is the servers, compared below;
                // the rest is covered by the structure digest.
                FileKind::Config => {}
                FileKind::Map => changed_maps.push(path.to_string()),
                FileKind::Certificate => cert_updates.push(RuntimeOp::UpdateCertificate {
                    path: path.to_string(),
                }),
                // Membership is compared through the plan's crt-lists.
                FileKind::CrtList => {}
                // HAProxy reads Lua only when it loads its configuration.
                FileKind::Lua | FileKind::CaFile => reasons.push(format!("{path} changed")),
            },
            (None, Some(new))
                if new.kind == FileKind::Certificate && cert_adds.contains_key(path) => {}
            (Some(old), None)
                if old.kind == FileKind::Certificate && cert_removes.contains_key(path) => {}
            (None, Some(_)) => reasons.push(format!("{path} is new")),
            (Some(_), None) => reasons.push(format!("{path} is gone")),
            (None, None) => {}
        }
    }
    (cert_updates, changed_maps)
}

/// The server changes of the backends both versions declare alike (the
/// same name, lent to the same Service if a spare): what the runtime API
/// can change while a reload the rest needs waits for its slot. Empty when
/// any of them would need the reload itself (a server's keywords, a DNS
/// name).
pub fn server_changes_alone(running: &Plan, desired: &Plan) -> Vec<RuntimeOp> {
    let desired_by_name: BTreeMap<&str, &Arc<BackendPlan>> = desired
        .backends
        .iter()
        .map(|b| (b.name.as_str(), b))
        .collect();
    let (old, new): (Vec<Arc<BackendPlan>>, Vec<Arc<BackendPlan>>) = running
        .backends
        .iter()
        .filter_map(|old| {
            let new = desired_by_name.get(old.name.as_str())?;
            let alike = old.role.lent_to() == new.role.lent_to();
            alike.then(|| (Arc::clone(old), Arc::clone(new)))
        })
        .unzip();
    let mut reasons = Vec::new();
    let (changes, removes) = diff_backends(&old, &new, &mut reasons);
    if !reasons.is_empty() {
        return Vec::new();
    }
    changes.into_iter().chain(removes).collect()
}

/// The certificates renewed in place: new content at a path both versions
/// hold, listed alike by every crt-list. What `set ssl cert` can change
/// while a reload the rest needs waits for its slot.
pub fn certificate_renewals_alone(
    running: VersionView<'_>,
    desired: VersionView<'_>,
) -> Vec<RuntimeOp> {
    fn listed<'a>(plan: &'a Plan, cert: &str) -> Vec<(&'a str, &'a CrtListEntry)> {
        plan.crt_lists
            .iter()
            .flat_map(|list| {
                list.entries
                    .iter()
                    .filter(move |e| e.certificate == cert)
                    .map(|e| (list.path.as_str(), e))
            })
            .collect()
    }
    desired
        .files
        .iter()
        .filter(|(path, new)| {
            new.kind == FileKind::Certificate
                && running
                    .files
                    .get(path)
                    .is_some_and(|old| old.kind == FileKind::Certificate && old != *new)
                && listed(running.plan, path) == listed(desired.plan, path)
        })
        .map(|(path, _)| RuntimeOp::UpdateCertificate {
            path: path.to_string(),
        })
        .collect()
}

/// A spare lent to one Service in the running version and to another in
/// the desired one (the versions between, which emptied it, were skipped):
/// added servers would take the old Service's traffic until its servers
/// are removed, so a reload moves it instead.
fn spares_changing_hands(running: &Plan, desired: &Plan, reasons: &mut Vec<String>) {
    let lent: BTreeMap<&str, &str> = running
        .backends
        .iter()
        .filter_map(|b| Some((b.name.as_str(), b.role.lent_to()?)))
        .collect();
    for backend in &desired.backends {
        let (Some(to), Some(was)) = (backend.role.lent_to(), lent.get(backend.name.as_str()))
        else {
            continue;
        };
        if to != *was {
            reasons.push(format!(
                "spare backend {} goes from {was} to {to} in one step",
                backend.name
            ));
        }
    }
}

fn diff_backends<'a>(
    running: &'a [Arc<BackendPlan>],
    desired: &'a [Arc<BackendPlan>],
    reasons: &mut Vec<String>,
) -> (Vec<RuntimeOp>, Vec<RuntimeOp>) {
    let mut changes = Vec::new();
    let mut removes = Vec::new();
    let by_name = |backends: &'a [Arc<BackendPlan>]| -> BTreeMap<&'a str, &'a BackendPlan> {
        backends.iter().map(|b| (b.name.as_str(), &**b)).collect()
    };
    let (old, new) = (by_name(running), by_name(desired));
    if old.keys().ne(new.keys()) {
        reasons.push("the set of backends changed".to_string());
        return (changes, removes);
    }
    let servers = |backend: &'a BackendPlan| -> BTreeMap<&'a str, &'a ServerPlan> {
        (backend.servers.iter())
            .map(|s| (s.name.as_str(), s))
            .collect()
    };
    for (&backend, &now) in &new {
        let was = old[backend];
        // Shared with the running plan, or equal: nothing to change.
        if std::ptr::eq(was, now) || was.servers == now.servers {
            continue;
        }
        let (old_servers, new_servers) = (servers(was), servers(now));
        let backend = backend.to_string();
        for (&name, &server) in &new_servers {
            let Some(&was) = old_servers.get(name) else {
                if server.resolve {
                    reasons.push(format!("DNS-named server {backend}/{name} is new"));
                } else {
                    changes.push(RuntimeOp::AddServer {
                        backend: backend.clone(),
                        server: server.clone(),
                    });
                }
                continue;
            };
            if (&was.keywords, &was.proto) != (&server.keywords, &server.proto) {
                reasons.push(format!(
                    "server {backend}/{name} speaks to its pod differently (its keywords changed)"
                ));
                continue;
            }
            if was.resolve || server.resolve {
                if was != server {
                    reasons.push(format!("DNS-named server {backend}/{name} changed"));
                }
                continue;
            }
            if (&was.address, was.port) != (&server.address, server.port) {
                changes.push(RuntimeOp::SetServerAddress {
                    backend: backend.clone(),
                    server: name.to_string(),
                    address: server.address.clone(),
                    port: server.port,
                });
            }
            if was.weight != server.weight {
                changes.push(RuntimeOp::SetServerWeight {
                    backend: backend.clone(),
                    server: name.to_string(),
                    weight: server.weight,
                });
            }
            if was.state != server.state {
                changes.push(RuntimeOp::SetServerState {
                    backend: backend.clone(),
                    server: name.to_string(),
                    state: server.state,
                });
            }
        }
        for (&name, &was) in &old_servers {
            if new_servers.contains_key(name) {
                continue;
            }
            if was.resolve {
                reasons.push(format!("DNS-named server {backend}/{name} is gone"));
            } else {
                removes.push(RuntimeOp::RemoveServer {
                    backend: backend.clone(),
                    server: name.to_string(),
                });
            }
        }
    }
    (changes, removes)
}

#[cfg(test)]
mod tests;
