//! Drift: what HAProxy runs compared with what the agent applied, and the
//! runtime operations that put it back (a server changed by hand, a map
//! edited through the socket, a certificate replaced through the socket,
//! runtime state lost by a restart).

use std::collections::BTreeMap;

use hawser_haproxy::{RuntimeApi, ServerState as LiveServer, SocketError};
use hawser_plan::{FileSet, LIVE_TWINS_MAP_PATH, MapPlan, MatchKind, Plan, ServerState};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use sha1::{Digest, Sha1};

use crate::diff::RuntimeOp;

/// Compares live servers, maps and certificates with the applied version;
/// returns the repairs.
pub async fn repairs(
    api: &RuntimeApi,
    plan: &Plan,
    files: &FileSet,
) -> Result<Vec<RuntimeOp>, SocketError> {
    let live = api.show_servers_state(None).await?;
    let mut ops = server_repairs(plan, &live);
    let mut live_twins_repair = None;
    for map in &plan.maps {
        let want = wanted_entries(map);
        if map.path == LIVE_TWINS_MAP_PATH {
            let live = api.show_map(&map.path).await?;
            if !names_a_copy_each(plan, &want, live) {
                live_twins_repair = Some(RuntimeOp::ReplaceMap {
                    path: map.path.clone(),
                });
            }
            continue;
        }
        for path in std::iter::once(&map.path).chain(&map.twin) {
            let mut live = api.show_map(path).await?;
            // A tree-indexed map edited by entry lists its entries in the
            // order they came; only a list-indexed one (`reg`) depends on it.
            if matches!(map.match_kind, MatchKind::Str | MatchKind::Beg) {
                live.sort();
            }
            if live != want {
                ops.push(RuntimeOp::ReplaceMap { path: path.clone() });
            }
        }
    }
    // Which copies requests read is put back last, once both copies hold
    // the applied entries.
    ops.extend(live_twins_repair);
    for certificate in &plan.certificates {
        let Some(want) = files.text(&certificate.path).and_then(leaf_fingerprint) else {
            continue;
        };
        let live = api.show_ssl_cert(&certificate.path).await?;
        let same = live
            .sha1_fingerprint
            .is_some_and(|have| have.eq_ignore_ascii_case(&want));
        if !same {
            ops.push(RuntimeOp::UpdateCertificate {
                path: certificate.path.clone(),
            });
        }
    }
    Ok(ops)
}

/// The applied entries of `map`, sorted when HAProxy indexes it as a tree.
fn wanted_entries(map: &MapPlan) -> Vec<(String, String)> {
    let mut want: Vec<(String, String)> = map
        .entries
        .iter()
        .map(|e| (e.key.to_string(), e.value.to_string()))
        .collect();
    if matches!(map.match_kind, MatchKind::Str | MatchKind::Beg) {
        want.sort();
    }
    want
}

/// Whether `live` (the live twins map) names, for each twinned map, one of
/// its two copies: either is right once an apply is done.
fn names_a_copy_each(
    plan: &Plan,
    want: &[(String, String)],
    mut live: Vec<(String, String)>,
) -> bool {
    live.sort();
    live.len() == want.len()
        && live.iter().zip(want).all(|((key, copy), (wanted, _))| {
            key == wanted
                && plan
                    .maps
                    .iter()
                    .any(|m| m.path == *key && (m.path == *copy || m.twin.as_ref() == Some(copy)))
        })
}

/// SHA-1 of the first certificate's DER, in hex: what `show ssl cert <file>`
/// prints as its `SHA1 FingerPrint`.
fn leaf_fingerprint(pem: &str) -> Option<String> {
    let leaf = CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()?
        .ok()?;
    Some(hex::encode_upper(Sha1::digest(leaf.as_ref())))
}

fn server_repairs(plan: &Plan, live: &[LiveServer]) -> Vec<RuntimeOp> {
    let mut by_backend: BTreeMap<&str, BTreeMap<&str, &LiveServer>> = BTreeMap::new();
    for server in live {
        by_backend
            .entry(server.backend.as_str())
            .or_default()
            .insert(server.name.as_str(), server);
    }
    let mut adds = Vec::new();
    let mut removes = Vec::new();
    for backend in &plan.backends {
        let live_servers = by_backend.remove(backend.name.as_str()).unwrap_or_default();
        for server in backend.servers.iter().filter(|s| !s.resolve) {
            let Some(now) = live_servers.get(server.name.as_str()) else {
                adds.push(RuntimeOp::AddServer {
                    backend: backend.name.clone(),
                    server: server.clone(),
                });
                continue;
            };
            if now.addr != server.address || now.port != server.port {
                adds.push(RuntimeOp::SetServerAddress {
                    backend: backend.name.clone(),
                    server: server.name.clone(),
                    address: server.address.clone(),
                    port: server.port,
                });
            }
            if now.weight != server.weight {
                adds.push(RuntimeOp::SetServerWeight {
                    backend: backend.name.clone(),
                    server: server.name.clone(),
                    weight: server.weight,
                });
            }
            let wants_ready = server.state == ServerState::Ready;
            if wants_ready == (now.in_maintenance() || now.draining()) {
                adds.push(RuntimeOp::SetServerState {
                    backend: backend.name.clone(),
                    server: server.name.clone(),
                    state: server.state,
                });
            }
        }
        for name in live_servers.keys() {
            if !backend.servers.iter().any(|s| s.name == *name) {
                removes.push(RuntimeOp::RemoveServer {
                    backend: backend.name.clone(),
                    server: name.to_string(),
                });
            }
        }
    }
    adds.extend(removes);
    adds
}
