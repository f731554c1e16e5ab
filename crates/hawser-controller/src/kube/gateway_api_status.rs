//! Gateway API status in the cluster: the conditions of hawser's
//! GatewayClasses, its Gateways (with their listeners) and the `parents` of
//! the routes that name them — written by the leader only, and only where
//! they differ from what the object says.
//!
//! ```text
//!  newest rendered store ──gateway_routing──► GatewayStatus ───┐
//!  the object's status (read once, then what was written) ─────┼─► stanza differs? ─► patch status
//!  leadership ─────────────────────────────────────────────────┘   (other controllers' route
//!                                                                    parents kept)
//! ```
//!
//! It follows every rendered store, not only delivered snapshots: a change
//! that leaves the configuration as it was (a route that does not attach
//! for another reason) still changes the status. The sources keep no
//! status, so the echo of a write renders nothing.
//! A route that stops naming an owned Gateway loses hawser's entries.

use std::collections::BTreeMap;
use std::time::Duration;

use ::kube::Client;
use ::kube::api::{Api, DynamicObject, Patch, PatchParams};
use hawser_model::{Kind, ObjectKey, ObjectRef, Store};
use hawser_render::{GatewayStatus, RouteStatus};
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::watch::gateway_api_resource;
use crate::fleet::RenderedStore;
use crate::gateway_status::{class_stanza, gateway_stanza, route_parents};

/// How long after a failed read or write the status is tried again.
pub const GATEWAY_STATUS_RETRY: Duration = Duration::from_secs(10);

/// Keeps the status of hawser's Gateway API objects equal to what the
/// newest rendered store gives while `leading` is `Some`, until `stop`
/// resolves.
pub async fn publish_gateway_status(
    client: Client,
    mut stores: watch::Receiver<Option<RenderedStore>>,
    mut leading: watch::Receiver<Option<u64>>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut writer = StatusWriter {
        client,
        known: BTreeMap::new(),
        failed: false,
    };
    loop {
        let store = stores.borrow_and_update().clone();
        if leading.borrow_and_update().is_some()
            && let Some(store) = store
        {
            let controller = &store.config.settings.gateway_controller;
            writer.failed = false;
            writer
                .sync(&store.store, &store.gateway_status, controller)
                .await;
        } else {
            // A new leader reads again: another one may have written meanwhile.
            writer.known.clear();
            writer.failed = false;
        }
        tokio::select! {
            () = &mut stop => return,
            changed = stores.changed() => if changed.is_err() { return },
            changed = leading.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(GATEWAY_STATUS_RETRY), if writer.failed => {}
        }
    }
}

struct StatusWriter {
    client: Client,
    /// What each object's status is known to say (read once, then written).
    known: BTreeMap<ObjectRef, Value>,
    /// A read or write failed: try again after [`GATEWAY_STATUS_RETRY`].
    failed: bool,
}

impl StatusWriter {
    async fn sync(&mut self, store: &Store, status: &GatewayStatus, controller: &str) {
        let now = now_rfc3339();
        for class in &status.classes {
            let object = ObjectRef::new(Kind::GatewayClass, ObjectKey::cluster(&class.name));
            self.write(&object, |previous| {
                class_stanza(class, previous, Some(&now))
            })
            .await;
        }
        for gateway in &status.gateways {
            let object = ObjectRef::new(Kind::Gateway, gateway.gateway.clone());
            self.write(&object, |previous| {
                gateway_stanza(gateway, previous, Some(&now))
            })
            .await;
        }
        for route in &status.routes {
            self.write(&route.route, |previous| {
                route_parents(route, controller, previous, Some(&now))
            })
            .await;
        }
        // Routes written before that no longer name an owned Gateway: hawser's
        // entries go, the others' stay.
        let dropped: Vec<ObjectRef> = self
            .known
            .keys()
            .filter(|o| is_route(o.kind) && !status.routes.iter().any(|r| &r.route == *o))
            .cloned()
            .collect();
        for object in dropped {
            if !holds(store, &object) {
                continue;
            }
            let none = RouteStatus {
                route: object.clone(),
                parents: Vec::new(),
            };
            self.write(&object, |previous| {
                route_parents(&none, controller, previous, Some(&now))
            })
            .await;
        }
        // Forget what left the store; keep routes that still carry an entry
        // of ours, so that it is removed if they stop naming our Gateways.
        self.known.retain(|object, status| {
            holds(store, object) && (!is_route(object.kind) || has_our_parent(status, controller))
        });
    }

    /// Writes the stanza `desired` makes of the current status, if it differs.
    async fn write(&mut self, object: &ObjectRef, desired: impl FnOnce(&Value) -> Value) {
        let Some(resource) = gateway_api_resource(object.kind) else {
            return;
        };
        let api: Api<DynamicObject> = if object.kind.is_cluster_scoped() {
            Api::all_with(self.client.clone(), &resource)
        } else {
            Api::namespaced_with(self.client.clone(), &object.key.namespace, &resource)
        };
        if !self.known.contains_key(object) {
            match api.get_opt(&object.key.name).await {
                Ok(Some(current)) => {
                    let status = current.data.get("status").cloned().unwrap_or(json!({}));
                    self.known.insert(object.clone(), status);
                }
                Ok(None) => return,
                Err(e) => {
                    warn!(object = %object, "cannot read the status: {e}");
                    self.failed = true;
                    return;
                }
            }
        }
        let current = self.known.get(object).cloned().unwrap_or(json!({}));
        let stanza = desired(&current);
        let unchanged = stanza
            .as_object()
            .is_some_and(|fields| fields.iter().all(|(k, v)| current.get(k) == Some(v)));
        if unchanged {
            return;
        }
        let patch = json!({ "status": stanza });
        match api
            .patch_status(
                &object.key.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(written) => {
                info!(object = %object, "Gateway API status written");
                let status = written.data.get("status").cloned().unwrap_or(stanza);
                self.known.insert(object.clone(), status);
            }
            Err(e) => {
                debug!(object = %object, "status write failed: {e}");
                self.known.remove(object);
                self.failed = true;
            }
        }
    }
}

fn is_route(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::HttpRoute | Kind::GrpcRoute | Kind::TlsRoute | Kind::TcpRoute
    )
}

/// Whether the store has this Gateway API object.
fn holds(store: &Store, object: &ObjectRef) -> bool {
    let key = &object.key;
    match object.kind {
        Kind::GatewayClass => store.gateway_class(&key.name).is_some(),
        Kind::Gateway => store.gateway(key).is_some(),
        Kind::HttpRoute => store.http_routes().any(|r| &r.meta.key == key),
        Kind::GrpcRoute => store.grpc_routes().any(|r| &r.meta.key == key),
        Kind::TlsRoute => store.tls_routes().any(|r| &r.meta.key == key),
        Kind::TcpRoute => store.tcp_routes().any(|r| &r.meta.key == key),
        _ => false,
    }
}

fn has_our_parent(status: &Value, controller: &str) -> bool {
    status["parents"]
        .as_array()
        .is_some_and(|all| all.iter().any(|p| p["controllerName"] == controller))
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}
