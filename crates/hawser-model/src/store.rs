//! The in-memory store: every object hawser renders from, indexed the way
//! templates look things up (by namespace/name, service → endpoint slices).
//!
//! Persistent maps (`imbl::OrdMap`): a clone shares every node with the
//! original, so a snapshot of the store costs O(1) and a change to a clone
//! copies only the O(log n) path to it. The admission webhook judges each
//! candidate on such a clone of the controller's snapshot.

use std::collections::BTreeSet;
use std::sync::Arc;

use imbl::OrdMap;
use imbl::ordmap::DiffItem;

use crate::{
    ConfigMap, EndpointSlice, ExtraResources, Gateway, GatewayClass, GrpcRoute, HttpRoute, Ingress,
    IngressClass, Kind, Namespace, ObjectKey, ObjectRef, ReferenceGrant, Secret, Service, TcpRoute,
    TlsRoute,
};

/// One object of a kind hawser reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    Ingress(Ingress),
    IngressClass(IngressClass),
    Service(Service),
    EndpointSlice(EndpointSlice),
    Secret(Secret),
    Namespace(Namespace),
    GatewayClass(GatewayClass),
    Gateway(Gateway),
    HttpRoute(HttpRoute),
    GrpcRoute(GrpcRoute),
    TlsRoute(TlsRoute),
    TcpRoute(TcpRoute),
    ReferenceGrant(ReferenceGrant),
    ConfigMap(ConfigMap),
}

impl Object {
    pub fn object_ref(&self) -> ObjectRef {
        match self {
            Object::Ingress(o) => ObjectRef::new(Kind::Ingress, o.key.clone()),
            Object::IngressClass(o) => {
                ObjectRef::new(Kind::IngressClass, ObjectKey::cluster(&o.name))
            }
            Object::Service(o) => ObjectRef::new(Kind::Service, o.key.clone()),
            Object::EndpointSlice(o) => ObjectRef::new(Kind::EndpointSlice, o.key.clone()),
            Object::Secret(o) => ObjectRef::new(Kind::Secret, o.key.clone()),
            Object::Namespace(o) => ObjectRef::new(Kind::Namespace, ObjectKey::cluster(&o.name)),
            Object::GatewayClass(o) => {
                ObjectRef::new(Kind::GatewayClass, ObjectKey::cluster(&o.name))
            }
            Object::Gateway(o) => ObjectRef::new(Kind::Gateway, o.key.clone()),
            Object::HttpRoute(o) => ObjectRef::new(Kind::HttpRoute, o.meta.key.clone()),
            Object::GrpcRoute(o) => ObjectRef::new(Kind::GrpcRoute, o.meta.key.clone()),
            Object::TlsRoute(o) => ObjectRef::new(Kind::TlsRoute, o.meta.key.clone()),
            Object::TcpRoute(o) => ObjectRef::new(Kind::TcpRoute, o.meta.key.clone()),
            Object::ReferenceGrant(o) => ObjectRef::new(Kind::ReferenceGrant, o.key.clone()),
            Object::ConfigMap(o) => ObjectRef::new(Kind::ConfigMap, o.key.clone()),
        }
    }
}

/// Sorted maps throughout, so that iterating the store is deterministic and a
/// render of the same store is byte-identical. Cloning is cheap (see above).
#[derive(Debug, Clone, Default)]
pub struct Store {
    ingresses: OrdMap<ObjectKey, Ingress>,
    ingress_classes: OrdMap<String, IngressClass>,
    services: OrdMap<ObjectKey, Service>,
    endpoint_slices: OrdMap<ObjectKey, EndpointSlice>,
    /// A Service's EndpointSlices: a few keys each, shared between copies
    /// of the store, and walked without the allocation a persistent set's
    /// iterator makes (a render walks every Service's).
    slices_by_service: OrdMap<ObjectKey, Arc<BTreeSet<ObjectKey>>>,
    secrets: OrdMap<ObjectKey, Secret>,
    namespaces: OrdMap<String, Namespace>,
    gateway_classes: OrdMap<String, GatewayClass>,
    gateways: OrdMap<ObjectKey, Gateway>,
    http_routes: OrdMap<ObjectKey, HttpRoute>,
    grpc_routes: OrdMap<ObjectKey, GrpcRoute>,
    tls_routes: OrdMap<ObjectKey, TlsRoute>,
    tcp_routes: OrdMap<ObjectKey, TcpRoute>,
    reference_grants: OrdMap<ObjectKey, ReferenceGrant>,
    config_maps: OrdMap<ObjectKey, ConfigMap>,
    /// The kinds a configuration adds (`watch.extraResources`).
    pub extra: ExtraResources,
}

impl Store {
    pub fn new() -> Self {
        Store::default()
    }

    /// Inserts or replaces an object; returns the one it replaced.
    pub fn insert(&mut self, object: Object) -> Option<Object> {
        let previous = self.remove(&object.object_ref());
        match object {
            Object::Ingress(o) => {
                self.ingresses.insert(o.key.clone(), o);
            }
            Object::IngressClass(o) => {
                self.ingress_classes.insert(o.name.clone(), o);
            }
            Object::Service(o) => {
                self.services.insert(o.key.clone(), o);
            }
            Object::EndpointSlice(o) => {
                if let Some(service) = slice_service(&o) {
                    let keys = self.slices_by_service.entry(service).or_default();
                    Arc::make_mut(keys).insert(o.key.clone());
                }
                self.endpoint_slices.insert(o.key.clone(), o);
            }
            Object::Secret(o) => {
                self.secrets.insert(o.key.clone(), o);
            }
            Object::Namespace(o) => {
                self.namespaces.insert(o.name.clone(), o);
            }
            Object::GatewayClass(o) => {
                self.gateway_classes.insert(o.name.clone(), o);
            }
            Object::Gateway(o) => {
                self.gateways.insert(o.key.clone(), o);
            }
            Object::HttpRoute(o) => {
                self.http_routes.insert(o.meta.key.clone(), o);
            }
            Object::GrpcRoute(o) => {
                self.grpc_routes.insert(o.meta.key.clone(), o);
            }
            Object::TlsRoute(o) => {
                self.tls_routes.insert(o.meta.key.clone(), o);
            }
            Object::TcpRoute(o) => {
                self.tcp_routes.insert(o.meta.key.clone(), o);
            }
            Object::ReferenceGrant(o) => {
                self.reference_grants.insert(o.key.clone(), o);
            }
            Object::ConfigMap(o) => {
                self.config_maps.insert(o.key.clone(), o);
            }
        }
        previous
    }

    /// Removes an object; returns it if it was there.
    pub fn remove(&mut self, object: &ObjectRef) -> Option<Object> {
        let key = &object.key;
        match object.kind {
            Kind::Ingress => self.ingresses.remove(key).map(Object::Ingress),
            Kind::IngressClass => self
                .ingress_classes
                .remove(&key.name)
                .map(Object::IngressClass),
            Kind::Service => self.services.remove(key).map(Object::Service),
            Kind::EndpointSlice => {
                let slice = self.endpoint_slices.remove(key)?;
                if let Some(service) = slice_service(&slice)
                    && let Some(keys) = self.slices_by_service.get_mut(&service)
                {
                    Arc::make_mut(keys).remove(key);
                    if keys.is_empty() {
                        self.slices_by_service.remove(&service);
                    }
                }
                Some(Object::EndpointSlice(slice))
            }
            Kind::Secret => self.secrets.remove(key).map(Object::Secret),
            Kind::Namespace => self.namespaces.remove(&key.name).map(Object::Namespace),
            Kind::GatewayClass => self
                .gateway_classes
                .remove(&key.name)
                .map(Object::GatewayClass),
            Kind::Gateway => self.gateways.remove(key).map(Object::Gateway),
            Kind::HttpRoute => self.http_routes.remove(key).map(Object::HttpRoute),
            Kind::GrpcRoute => self.grpc_routes.remove(key).map(Object::GrpcRoute),
            Kind::TlsRoute => self.tls_routes.remove(key).map(Object::TlsRoute),
            Kind::TcpRoute => self.tcp_routes.remove(key).map(Object::TcpRoute),
            Kind::ReferenceGrant => self
                .reference_grants
                .remove(key)
                .map(Object::ReferenceGrant),
            Kind::ConfigMap => self.config_maps.remove(key).map(Object::ConfigMap),
        }
    }

    pub fn len(&self) -> usize {
        self.ingresses.len()
            + self.ingress_classes.len()
            + self.services.len()
            + self.endpoint_slices.len()
            + self.secrets.len()
            + self.namespaces.len()
            + self.gateway_classes.len()
            + self.gateways.len()
            + self.http_routes.len()
            + self.grpc_routes.len()
            + self.tls_routes.len()
            + self.tcp_routes.len()
            + self.reference_grants.len()
            + self.config_maps.len()
            + self.extra.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn ingresses(&self) -> impl Iterator<Item = &Ingress> {
        self.ingresses.values()
    }

    pub fn ingress(&self, key: &ObjectKey) -> Option<&Ingress> {
        self.ingresses.get(key)
    }

    /// The Ingresses added, changed or removed from this store to `newer`
    /// (a copy of it, changed since), or none when there are more than
    /// `limit`. Found by the maps' shared nodes, so it costs in proportion
    /// to what changed, not to the number of Ingresses.
    pub fn ingress_changes(&self, newer: &Store, limit: usize) -> Option<Vec<ObjectKey>> {
        let mut changed = Vec::new();
        for item in self.ingresses.diff(&newer.ingresses) {
            if changed.len() == limit {
                return None;
            }
            changed.push(match item {
                DiffItem::Add(key, _) | DiffItem::Remove(key, _) => key.clone(),
                DiffItem::Update { new: (key, _), .. } => key.clone(),
            });
        }
        Some(changed)
    }

    /// The Services whose object or EndpointSlices were added, changed or
    /// removed from this store to `newer` (a copy of it, changed since), or
    /// none when more than `limit` such objects changed. Found by the maps'
    /// shared nodes, as [`Store::ingress_changes`].
    pub fn services_changed(&self, newer: &Store, limit: usize) -> Option<BTreeSet<ObjectKey>> {
        let mut changed = BTreeSet::new();
        let services = self.services.diff(&newer.services).map(|item| match item {
            DiffItem::Add(key, _)
            | DiffItem::Remove(key, _)
            | DiffItem::Update { new: (key, _), .. } => [Some(key.clone()), None],
        });
        let slices = (self.endpoint_slices.diff(&newer.endpoint_slices)).map(|item| match item {
            DiffItem::Add(_, slice) | DiffItem::Remove(_, slice) => [slice_service(slice), None],
            DiffItem::Update {
                old: (_, old),
                new: (_, new),
            } => [slice_service(old), slice_service(new)],
        });
        for (seen, services) in services.chain(slices).enumerate() {
            if seen == limit {
                return None;
            }
            changed.extend(services.into_iter().flatten());
        }
        Some(changed)
    }

    /// Whether `other` is a copy of this store in which no object of
    /// `kind` was inserted or removed since (it may differ in any other
    /// kind). Checked in constant time, by the maps' shared nodes (a map
    /// changes by copying what it changes, never in place): it may say no
    /// of two stores with equal objects of that kind.
    pub fn shares(&self, other: &Store, kind: Kind) -> bool {
        match kind {
            Kind::Ingress => self.ingresses.ptr_eq(&other.ingresses),
            Kind::IngressClass => self.ingress_classes.ptr_eq(&other.ingress_classes),
            Kind::Service => self.services.ptr_eq(&other.services),
            Kind::EndpointSlice => {
                self.endpoint_slices.ptr_eq(&other.endpoint_slices)
                    && self.slices_by_service.ptr_eq(&other.slices_by_service)
            }
            Kind::Secret => self.secrets.ptr_eq(&other.secrets),
            Kind::Namespace => self.namespaces.ptr_eq(&other.namespaces),
            Kind::GatewayClass => self.gateway_classes.ptr_eq(&other.gateway_classes),
            Kind::Gateway => self.gateways.ptr_eq(&other.gateways),
            Kind::HttpRoute => self.http_routes.ptr_eq(&other.http_routes),
            Kind::GrpcRoute => self.grpc_routes.ptr_eq(&other.grpc_routes),
            Kind::TlsRoute => self.tls_routes.ptr_eq(&other.tls_routes),
            Kind::TcpRoute => self.tcp_routes.ptr_eq(&other.tcp_routes),
            Kind::ReferenceGrant => self.reference_grants.ptr_eq(&other.reference_grants),
            Kind::ConfigMap => self.config_maps.ptr_eq(&other.config_maps),
        }
    }

    pub fn ingress_classes(&self) -> impl Iterator<Item = &IngressClass> {
        self.ingress_classes.values()
    }

    pub fn service(&self, key: &ObjectKey) -> Option<&Service> {
        self.services.get(key)
    }

    pub fn services(&self) -> impl Iterator<Item = &Service> {
        self.services.values()
    }

    /// The slices labelled with this service's name, in name order.
    pub fn endpoint_slices_for(&self, service: &ObjectKey) -> impl Iterator<Item = &EndpointSlice> {
        self.slices_by_service
            .get(service)
            .into_iter()
            .flat_map(|keys| keys.iter())
            .filter_map(|key| self.endpoint_slices.get(key))
    }

    pub fn secret(&self, key: &ObjectKey) -> Option<&Secret> {
        self.secrets.get(key)
    }

    pub fn secrets(&self) -> impl Iterator<Item = &Secret> {
        self.secrets.values()
    }

    pub fn namespace(&self, name: &str) -> Option<&Namespace> {
        self.namespaces.get(name)
    }

    pub fn gateway_classes(&self) -> impl Iterator<Item = &GatewayClass> {
        self.gateway_classes.values()
    }

    pub fn gateway_class(&self, name: &str) -> Option<&GatewayClass> {
        self.gateway_classes.get(name)
    }

    pub fn gateways(&self) -> impl Iterator<Item = &Gateway> {
        self.gateways.values()
    }

    pub fn gateway(&self, key: &ObjectKey) -> Option<&Gateway> {
        self.gateways.get(key)
    }

    pub fn http_routes(&self) -> impl Iterator<Item = &HttpRoute> {
        self.http_routes.values()
    }

    pub fn grpc_routes(&self) -> impl Iterator<Item = &GrpcRoute> {
        self.grpc_routes.values()
    }

    pub fn tls_routes(&self) -> impl Iterator<Item = &TlsRoute> {
        self.tls_routes.values()
    }

    pub fn tcp_routes(&self) -> impl Iterator<Item = &TcpRoute> {
        self.tcp_routes.values()
    }

    /// The ReferenceGrants in one namespace (grants only act on their own).
    pub fn config_map(&self, key: &ObjectKey) -> Option<&ConfigMap> {
        self.config_maps.get(key)
    }

    pub fn reference_grants_in<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a ReferenceGrant> {
        self.reference_grants
            .range(ObjectKey::new(namespace, "")..)
            .take_while(move |(key, _)| key.namespace == namespace)
            .map(|(_, grant)| grant)
    }
}

fn slice_service(slice: &EndpointSlice) -> Option<ObjectKey> {
    slice
        .service_name
        .as_ref()
        .map(|name| ObjectKey::new(&slice.key.namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(name: &str, service: &str) -> EndpointSlice {
        EndpointSlice {
            key: ObjectKey::new("app", name),
            service_name: Some(service.to_string()),
            address_type: "IPv4".to_string(),
            ports: vec![],
            endpoints: vec![],
        }
    }

    #[test]
    fn slices_are_indexed_by_service_and_unindexed_on_replace() {
        let mut store = Store::new();
        store.insert(Object::EndpointSlice(slice("web-1", "web")));
        store.insert(Object::EndpointSlice(slice("web-2", "web")));
        let web = ObjectKey::new("app", "web");
        assert_eq!(store.endpoint_slices_for(&web).count(), 2);

        // The same slice relabelled to another service moves with it.
        store.insert(Object::EndpointSlice(slice("web-2", "api")));
        assert_eq!(store.endpoint_slices_for(&web).count(), 1);
        assert_eq!(
            store
                .endpoint_slices_for(&ObjectKey::new("app", "api"))
                .count(),
            1
        );

        store.remove(&ObjectRef::new(
            Kind::EndpointSlice,
            ObjectKey::new("app", "web-1"),
        ));
        assert_eq!(store.endpoint_slices_for(&web).count(), 0);
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn what_changed_since_a_copy_is_found_and_bounded() {
        let mut store = Store::new();
        for i in 0..100 {
            store.insert(Object::EndpointSlice(slice(
                &format!("s-{i}"),
                &format!("svc-{i}"),
            )));
        }
        let ingress = |name: &str| {
            Object::Ingress(Ingress {
                key: ObjectKey::new("app", name),
                created: None,
                class_name: None,
                annotations: Default::default(),
                default_backend: None,
                tls: vec![],
                rules: vec![],
            })
        };
        store.insert(ingress("kept"));
        let mut copy = store.clone();
        assert_eq!(store.ingress_changes(&copy, 8), Some(vec![]));
        assert_eq!(store.services_changed(&copy, 8), Some(BTreeSet::new()));
        assert!(store.shares(&copy, Kind::Ingress) && store.shares(&copy, Kind::EndpointSlice));

        // A slice moved from one Service to another changes both.
        copy.insert(Object::EndpointSlice(slice("s-1", "svc-moved")));
        copy.insert(ingress("new"));
        assert!(!store.shares(&copy, Kind::EndpointSlice) && store.shares(&copy, Kind::Service));
        let changed: Vec<String> = (store.services_changed(&copy, 8).expect("few"))
            .into_iter()
            .map(|key| key.name)
            .collect();
        assert_eq!(changed, ["svc-1", "svc-moved"]);
        assert_eq!(
            store.ingress_changes(&copy, 8),
            Some(vec![ObjectKey::new("app", "new")])
        );
        // Re-inserting an equal object copies nodes but changes nothing.
        copy.insert(ingress("kept"));
        assert_eq!(store.ingress_changes(&copy, 8).map(|c| c.len()), Some(1));

        for i in 0..20 {
            copy.insert(Object::EndpointSlice(slice(&format!("s-{i}"), "elsewhere")));
        }
        assert_eq!(
            store.services_changed(&copy, 8),
            None,
            "more than the limit"
        );
        assert!(store.services_changed(&copy, 64).is_some());
    }

    #[test]
    fn reference_grants_are_listed_by_namespace() {
        let grant = |namespace: &str, name: &str| {
            Object::ReferenceGrant(ReferenceGrant {
                key: ObjectKey::new(namespace, name),
                from: vec![],
                to: vec![],
            })
        };
        let mut store = Store::new();
        for (namespace, name) in [("a", "x"), ("ab", "y"), ("b", "z"), ("b", "w")] {
            store.insert(grant(namespace, name));
        }
        let names = |ns: &str| -> Vec<String> {
            store
                .reference_grants_in(ns)
                .map(|g| g.key.name.clone())
                .collect()
        };
        assert_eq!(names("a"), vec!["x"]);
        assert_eq!(names("b"), vec!["w", "z"]);
        assert!(names("c").is_empty());
        assert_eq!(store.len(), 4);
    }

    #[test]
    fn a_clone_shares_the_maps_and_a_change_to_it_leaves_the_original() {
        let mut store = Store::new();
        for i in 0..1000 {
            store.insert(Object::EndpointSlice(slice(&format!("s-{i}"), "web")));
        }
        let mut copy = store.clone();
        assert!(copy.endpoint_slices.ptr_eq(&store.endpoint_slices));
        assert!(copy.slices_by_service.ptr_eq(&store.slices_by_service));

        copy.insert(Object::EndpointSlice(slice("new", "web")));
        assert!(!copy.endpoint_slices.ptr_eq(&store.endpoint_slices));
        let web = ObjectKey::new("app", "web");
        assert_eq!(store.endpoint_slices_for(&web).count(), 1000);
        assert_eq!(copy.endpoint_slices_for(&web).count(), 1001);
        assert_eq!((store.len(), copy.len()), (1000, 1001));
    }
}
