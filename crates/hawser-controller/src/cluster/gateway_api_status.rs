//! Gateway API status in the cluster: the conditions of hawser's
//! GatewayClasses, its Gateways (with their listeners and addresses) and the
//! `parents` of the routes that name them — written by the leader only, and
//! only where they differ from what the object says.
//!
//! ```text
//!  newest rendered store ──gateway_routing──► GatewayStatus ───┐
//!  fleet status (what each agent serves) ── Programmed ────────┤
//!  publish Service addresses ── status.addresses ──────────────┤
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
//!
//! `Programmed` turns `True` only once every agent serves a generation that
//! carries the Gateway as it is ([`crate::gateway_status::Rollout`]); the
//! fleet's status wakes the writer only when what an agent serves changes.
//! A Gateway's addresses are the publish Service's (none without one).

use std::collections::BTreeMap;
use std::time::Duration;

use ::kube::Client;
use ::kube::api::{Api, DynamicObject, Patch, PatchParams};
use hawser_model::{Kind, ObjectKey, ObjectRef, Store};
use hawser_render::RouteStatus;
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::watch::gateway_api_resource;
use crate::addresses::{PublishedAddresses, ServiceAddresses};
use crate::fleet::{FleetStatus, RenderedStore};
use crate::gateway_status::{
    CarriedSince, Rollout, assign_addresses, class_stanza, gateway_stanza, programmed_status,
    route_parents,
};

/// How long after a failed read or write the status is tried again.
pub const GATEWAY_STATUS_RETRY: Duration = Duration::from_secs(10);

/// How long the writer waits, at start, for the publish Service to be read:
/// a Gateway's first status then has its addresses, not a second write for
/// them. Past it (the Service cannot be read) Gateways are written without.
pub const ADDRESSES_WAIT: Duration = Duration::from_secs(5);

/// What the Gateway API status is made from.
#[derive(Debug)]
pub struct GatewayStatusSources {
    /// Every rendered store ([`crate::fleet::FleetSink::subscribe_stores`]).
    pub stores: watch::Receiver<Option<RenderedStore>>,
    /// What each agent serves ([`crate::fleet::Fleet::status`]).
    pub fleet: watch::Receiver<FleetStatus>,
    /// The publish Service's addresses; `None` when none is configured.
    pub addresses: Option<watch::Receiver<PublishedAddresses>>,
}

/// Keeps the status of hawser's Gateway API objects equal to what the
/// newest rendered store, the fleet and the publish Service give while
/// `leading` is `Some`, until `stop` resolves.
pub async fn publish_gateway_status(
    client: Client,
    sources: GatewayStatusSources,
    mut leading: watch::Receiver<Option<u64>>,
    stop: impl Future<Output = ()>,
) {
    let GatewayStatusSources {
        mut stores,
        mut fleet,
        mut addresses,
    } = sources;
    tokio::pin!(stop);
    if let Some(addresses) = addresses.as_mut() {
        let read = addresses.wait_for(|a| a.state != ServiceAddresses::Unread);
        tokio::select! {
            () = &mut stop => return,
            _ = tokio::time::timeout(ADDRESSES_WAIT, read) => {}
        }
    }
    let mut writer = StatusWriter {
        client,
        known: BTreeMap::new(),
        failed: false,
        since: CarriedSince::default(),
    };
    let mut rollout = Rollout::of(&fleet.borrow_and_update());
    let (mut fleet_open, mut addresses_open) = (true, addresses.is_some());
    let mut dirty = true;
    loop {
        if std::mem::take(&mut dirty) {
            let store = stores.borrow_and_update().clone();
            let published = addresses.as_mut().map(|a| a.borrow_and_update().clone());
            if leading.borrow_and_update().is_some()
                && let Some(store) = store
            {
                writer.failed = false;
                writer.sync(&store, &rollout, published.as_ref()).await;
            } else {
                // A new leader reads again: another one may have written meanwhile.
                writer.known.clear();
                writer.failed = false;
            }
        }
        let followed = addresses.as_mut().filter(|_| addresses_open);
        let addresses_changed = async move {
            match followed {
                Some(a) => a.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = &mut stop => return,
            changed = stores.changed() => if changed.is_err() { return },
            changed = leading.changed() => if changed.is_err() { return },
            changed = fleet.changed(), if fleet_open => {
                fleet_open = changed.is_ok();
                let now = Rollout::of(&fleet.borrow_and_update());
                if now == rollout {
                    continue;
                }
                rollout = now;
            }
            open = addresses_changed => addresses_open = open,
            () = tokio::time::sleep(GATEWAY_STATUS_RETRY), if writer.failed => {}
        }
        dirty = true;
    }
}

struct StatusWriter {
    client: Client,
    /// What each object's status is known to say (read once, then written).
    known: BTreeMap<ObjectRef, Value>,
    /// A read or write failed: try again after [`GATEWAY_STATUS_RETRY`].
    failed: bool,
    /// Since which generation each Gateway is as it is.
    since: CarriedSince,
}

impl StatusWriter {
    async fn sync(
        &mut self,
        rendered: &RenderedStore,
        rollout: &Rollout,
        published: Option<&PublishedAddresses>,
    ) {
        let store = &rendered.store;
        let status = &rendered.gateway_status;
        let controller = &rendered.config.settings.gateway_controller;
        let now = now_rfc3339();
        for class in &status.classes {
            let object = ObjectRef::new(Kind::GatewayClass, ObjectKey::cluster(&class.name));
            self.write(&object, |previous| {
                class_stanza(class, previous, Some(&now))
            })
            .await;
        }
        for gateway in &status.gateways {
            let since = self.since.record(gateway, rendered.generation);
            let waiting = rollout.serves(since).err();
            let requested = store
                .gateway(&gateway.gateway)
                .map_or(&[][..], |g| g.addresses.as_slice());
            let addresses = assign_addresses(requested, published);
            let gateway =
                programmed_status(gateway, addresses.problem.as_ref(), waiting.as_deref());
            let object = ObjectRef::new(Kind::Gateway, gateway.gateway.clone());
            self.write(&object, |previous| {
                let mut stanza = gateway_stanza(&gateway, previous, Some(&now));
                if let (Some(list), Some(fields)) = (addresses.status, stanza.as_object_mut()) {
                    fields.insert("addresses".to_string(), list);
                }
                stanza
            })
            .await;
        }
        self.since
            .retain(|key| status.gateways.iter().any(|g| &g.gateway == key));
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
        // `null` removes a field: absent is what it asks for.
        let unchanged = stanza.as_object().is_some_and(|fields| {
            fields
                .iter()
                .all(|(k, v)| current.get(k).unwrap_or(&Value::Null) == v)
        });
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
