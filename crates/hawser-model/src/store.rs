//! The in-memory store: every object hawser renders from, indexed the way
//! templates look things up (by namespace/name, service → endpoint slices).

use std::collections::{BTreeMap, BTreeSet};

use crate::{
    EndpointSlice, ExtraResources, Ingress, IngressClass, Kind, ObjectKey, ObjectRef, Secret,
    Service,
};

/// One object of a kind hawser reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    Ingress(Ingress),
    IngressClass(IngressClass),
    Service(Service),
    EndpointSlice(EndpointSlice),
    Secret(Secret),
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
        }
    }
}

/// Sorted maps throughout, so that iterating the store is deterministic and a
/// render of the same store is byte-identical.
#[derive(Debug, Clone, Default)]
pub struct Store {
    ingresses: BTreeMap<ObjectKey, Ingress>,
    ingress_classes: BTreeMap<String, IngressClass>,
    services: BTreeMap<ObjectKey, Service>,
    endpoint_slices: BTreeMap<ObjectKey, EndpointSlice>,
    slices_by_service: BTreeMap<ObjectKey, BTreeSet<ObjectKey>>,
    secrets: BTreeMap<ObjectKey, Secret>,
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
                    self.slices_by_service
                        .entry(service)
                        .or_default()
                        .insert(o.key.clone());
                }
                self.endpoint_slices.insert(o.key.clone(), o);
            }
            Object::Secret(o) => {
                self.secrets.insert(o.key.clone(), o);
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
                    keys.remove(key);
                    if keys.is_empty() {
                        self.slices_by_service.remove(&service);
                    }
                }
                Some(Object::EndpointSlice(slice))
            }
            Kind::Secret => self.secrets.remove(key).map(Object::Secret),
        }
    }

    pub fn len(&self) -> usize {
        self.ingresses.len()
            + self.ingress_classes.len()
            + self.services.len()
            + self.endpoint_slices.len()
            + self.secrets.len()
            + self.extra.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn ingresses(&self) -> impl Iterator<Item = &Ingress> {
        self.ingresses.values()
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
            .flatten()
            .filter_map(|key| self.endpoint_slices.get(key))
    }

    pub fn secret(&self, key: &ObjectKey) -> Option<&Secret> {
        self.secrets.get(key)
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
}
