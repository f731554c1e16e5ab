//! What the source holds of the cluster: trimmed views per watch, the
//! relists in progress, which Secrets' data to keep.
//!
//! Secret data is the one large thing a cluster holds that hawser may need:
//! it is kept only for Secrets an Ingress or a Gateway listener refers to
//! (and the kept ones the options name). A Secret arriving while nobody
//! refers to it is stored without its data; when an Ingress or a Gateway
//! starts to refer to it, the source reads it once ([`Effect::fetch`]).

use std::collections::{BTreeMap, BTreeSet};

use hawser_model::{Kind, Object, ObjectKey, ObjectRef, Store};
use hawser_render::features::{Target, named_secrets};

use super::watch::{Change, Item, Message};
use super::{ClusterStatus, Scope, WatchStatus};

/// What applying a message calls for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effect {
    /// The objects changed: render (after the debounce).
    pub changed: bool,
    /// Secrets to read now.
    pub fetch: Vec<ObjectKey>,
    /// A watch's status changed: report it.
    pub watch_status: bool,
}

#[derive(Debug)]
pub struct Cluster {
    objects: BTreeMap<ObjectRef, Object>,
    /// What renders read: `objects` less the Secrets held without data,
    /// brought up to date by the objects touched since the last snapshot
    /// (`touched`) instead of built anew, which cloned every object on
    /// every render. Its maps share their nodes with every snapshot handed
    /// out, so a snapshot costs no copy.
    store: Store,
    touched: BTreeSet<ObjectRef>,
    malformed: BTreeMap<ObjectRef, String>,
    /// Relists in progress: what each has listed so far.
    relists: BTreeMap<Scope, Vec<Item>>,
    watches: BTreeMap<Scope, WatchStatus>,
    /// Secrets held without their data.
    dropped: BTreeSet<ObjectKey>,
    /// Secrets referred to: by Ingresses, and the kept ones.
    referenced: BTreeSet<ObjectKey>,
    kept: BTreeSet<ObjectKey>,
    fetching: BTreeSet<ObjectKey>,
    fetch_failures: BTreeMap<ObjectKey, String>,
}

impl Cluster {
    pub fn new(scopes: Vec<Scope>, kept: BTreeSet<ObjectKey>) -> Self {
        Cluster {
            objects: BTreeMap::new(),
            store: Store::new(),
            touched: BTreeSet::new(),
            malformed: BTreeMap::new(),
            relists: BTreeMap::new(),
            watches: scopes
                .into_iter()
                .map(|scope| (scope, WatchStatus::default()))
                .collect(),
            dropped: BTreeSet::new(),
            referenced: kept.clone(),
            kept,
            fetching: BTreeSet::new(),
            fetch_failures: BTreeMap::new(),
        }
    }

    /// Every watch has listed once and no Secret read is in flight: a
    /// render now sees the whole cluster.
    pub fn ready(&self) -> bool {
        self.watches.values().all(|w| w.synced) && self.fetching.is_empty()
    }

    pub fn apply(&mut self, message: Message) -> Effect {
        let mut effect = Effect::default();
        match message {
            Message::Watch(scope, change) => self.apply_change(scope, change, &mut effect),
            Message::Fetched { key, result } => {
                self.fetching.remove(&key);
                effect.changed = true;
                match result {
                    Ok(Some(secret)) => {
                        self.fetch_failures.remove(&key);
                        if self.dropped.contains(&key) && self.referenced.contains(&key) {
                            self.dropped.remove(&key);
                            let object_ref = ObjectRef::new(Kind::Secret, key);
                            self.touched.insert(object_ref.clone());
                            self.objects.insert(object_ref, Object::Secret(secret));
                        }
                    }
                    // Deleted meanwhile: its watch says so too.
                    Ok(None) => {
                        self.fetch_failures.remove(&key);
                    }
                    Err(reason) => {
                        self.fetch_failures.insert(key, reason);
                    }
                }
            }
        }
        effect
    }

    fn apply_change(&mut self, scope: Scope, change: Change, effect: &mut Effect) {
        match change {
            Change::Relist => {
                self.relists.insert(scope.clone(), Vec::new());
                self.watch(&scope).lists += 1;
                effect.watch_status = true;
            }
            Change::Listed(item) => match self.relists.get_mut(&scope) {
                Some(listed) => listed.push(item),
                None => {
                    if self.store(item, effect) {
                        self.update_references(effect);
                    }
                }
            },
            Change::ListDone => {
                let listed = self.relists.remove(&scope).unwrap_or_default();
                let present: BTreeSet<ObjectRef> = listed.iter().map(item_ref).collect();
                let covered = |object: &ObjectRef| scope.covers(object.kind, &object.key);
                let gone: Vec<ObjectRef> = self
                    .objects
                    .keys()
                    .chain(self.malformed.keys())
                    .filter(|o| covered(o) && !present.contains(o))
                    .cloned()
                    .collect();
                // References are recomputed once, after the whole list: a
                // Secret still referred to keeps its data throughout.
                let mut ingresses = false;
                for object in gone {
                    ingresses |= self.remove(&object, effect);
                }
                for item in listed {
                    ingresses |= self.store(item, effect);
                }
                let watch = self.watch(&scope);
                watch.synced = true;
                watch.last_error = None;
                if ingresses {
                    self.update_references(effect);
                }
                if refers_to_secrets(scope.kind) && self.ingresses_synced() {
                    self.drop_unreferenced_data();
                }
                effect.watch_status = true;
                effect.changed = true;
            }
            Change::Applied(item) => {
                if self.store(item, effect) {
                    self.update_references(effect);
                }
            }
            Change::Deleted(object) => {
                if self.remove(&object, effect) {
                    self.update_references(effect);
                }
            }
            Change::Failed(error) => {
                let watch = self.watch(&scope);
                watch.errors += 1;
                watch.last_error = Some(error);
                effect.watch_status = true;
            }
            // Listed as empty the first time, so renders need not wait for a
            // kind that may never be served; objects already held stay.
            Change::Unavailable(error) => {
                let watch = self.watch(&scope);
                let first = !watch.synced;
                watch.synced = true;
                watch.errors += 1;
                watch.last_error = Some(error);
                effect.watch_status = true;
                effect.changed |= first;
            }
        }
    }

    fn watch(&mut self, scope: &Scope) -> &mut WatchStatus {
        self.watches.entry(scope.clone()).or_default()
    }

    /// Stores one object (or its problem); whether an Ingress changed, so
    /// that the references need a look.
    fn store(&mut self, item: Item, effect: &mut Effect) -> bool {
        match item {
            Item::Object(mut object) => {
                let object_ref = object.object_ref();
                let was_malformed = self.malformed.remove(&object_ref).is_some();
                // Until every Ingress watch has listed, references are not
                // known: data is kept for now (and swept then), rather than
                // dropped and read again one Secret at a time.
                let references_known = self.ingresses_synced();
                if let Object::Secret(secret) = &mut object {
                    if self.referenced.contains(&secret.key) || !references_known {
                        self.dropped.remove(&secret.key);
                    } else {
                        secret.drop_data();
                        self.dropped.insert(secret.key.clone());
                    }
                }
                let is_ingress = refers_to_secrets(object_ref.kind);
                // An update that changes nothing hawser keeps (a status
                // write, hawser's own included) renders nothing.
                if was_malformed || self.objects.get(&object_ref) != Some(&object) {
                    effect.changed = true;
                }
                // Touched even when equal: whether a Secret is held
                // without data may have changed alone.
                self.touched.insert(object_ref.clone());
                self.objects.insert(object_ref, object);
                is_ingress
            }
            Item::Malformed { object, reason } => {
                effect.changed = true;
                let removed = self.remove(&object, effect);
                self.malformed.insert(object, reason);
                removed
            }
        }
    }

    /// Removes one object (or its problem); whether an Ingress went.
    fn remove(&mut self, object: &ObjectRef, effect: &mut Effect) -> bool {
        effect.changed = true;
        self.malformed.remove(object);
        let removed = self.objects.remove(object).is_some();
        self.touched.insert(object.clone());
        if object.kind == Kind::Secret {
            self.dropped.remove(&object.key);
            self.fetch_failures.remove(&object.key);
        }
        removed && refers_to_secrets(object.kind)
    }

    /// Every watch of the kinds that refer to Secrets has listed.
    fn ingresses_synced(&self) -> bool {
        self.watches
            .iter()
            .filter(|(scope, _)| refers_to_secrets(scope.kind))
            .all(|(_, watch)| watch.synced)
    }

    /// Drops the data of every Secret no Ingress refers to.
    fn drop_unreferenced_data(&mut self) {
        for (object_ref, object) in &mut self.objects {
            if let Object::Secret(secret) = object
                && !self.referenced.contains(&secret.key)
            {
                secret.drop_data();
                self.dropped.insert(secret.key.clone());
                self.touched.insert(object_ref.clone());
            }
        }
    }

    /// Recomputes the Secrets referred to; drops the data of those no longer
    /// referred to, and asks for those newly referred to whose data was
    /// dropped.
    fn update_references(&mut self, effect: &mut Effect) {
        let mut referenced = self.kept.clone();
        // Ingress is the first kind in the map's order: only they are read.
        let ingresses = self
            .objects
            .iter()
            .take_while(|(object, _)| object.kind == Kind::Ingress);
        for (_, object) in ingresses {
            if let Object::Ingress(ingress) = object {
                referenced.extend(ingress.tls.iter().filter_map(|tls| {
                    tls.secret_name
                        .as_ref()
                        .map(|name| ObjectKey::new(&ingress.key.namespace, name))
                }));
                // The users of its basic authentication, the CAs of its
                // client certificates and its pods, in any annotation dialect.
                let namespace = &ingress.key.namespace;
                referenced.extend(
                    named_secrets(&ingress.annotations, Target::Ingress, namespace)
                        .iter()
                        .map(|name| ObjectKey::new(namespace, name)),
                );
            }
        }
        // The CAs Services verify their pods with.
        let first_service = ObjectRef::new(Kind::Service, ObjectKey::new("", ""));
        let services = self
            .objects
            .range(first_service..)
            .take_while(|(object, _)| object.kind == Kind::Service);
        for (_, object) in services {
            if let Object::Service(service) = object {
                let namespace = &service.key.namespace;
                referenced.extend(
                    named_secrets(&service.annotations, Target::Service, namespace)
                        .iter()
                        .map(|name| ObjectKey::new(namespace, name)),
                );
            }
        }
        // Gateways' listener certificates, wherever they are (a grant is
        // checked when the Gateway is programmed, not here).
        let first_gateway = ObjectRef::new(Kind::Gateway, ObjectKey::new("", ""));
        let gateways = self
            .objects
            .range(first_gateway..)
            .take_while(|(object, _)| object.kind == Kind::Gateway);
        for (_, object) in gateways {
            if let Object::Gateway(gateway) = object {
                let refs = gateway
                    .listeners
                    .iter()
                    .filter_map(|l| l.tls.as_ref())
                    .flat_map(|tls| &tls.certificate_refs)
                    .filter(|r| r.group.is_empty() && r.kind == "Secret");
                referenced.extend(refs.map(|r| {
                    let namespace = r.namespace.as_deref().unwrap_or(&gateway.key.namespace);
                    ObjectKey::new(namespace, &r.name)
                }));
            }
        }
        for key in self.referenced.difference(&referenced) {
            let object_ref = ObjectRef::new(Kind::Secret, key.clone());
            if let Some(Object::Secret(secret)) = self.objects.get_mut(&object_ref) {
                secret.drop_data();
                self.dropped.insert(key.clone());
                self.touched.insert(object_ref);
            }
        }
        for key in referenced.difference(&self.referenced) {
            if self.dropped.contains(key) && self.fetching.insert(key.clone()) {
                effect.fetch.push(key.clone());
            }
        }
        self.referenced = referenced;
    }

    /// The store to render, and what could not be used.
    pub fn snapshot(&mut self) -> (Store, Vec<String>) {
        for object_ref in std::mem::take(&mut self.touched) {
            match self.objects.get(&object_ref) {
                Some(object) if !self.held_without_data(&object_ref) => {
                    self.store.insert(object.clone());
                }
                _ => {
                    self.store.remove(&object_ref);
                }
            }
        }
        let store = self.store.clone();
        let mut problems: Vec<String> = self
            .malformed
            .iter()
            .map(|(object, reason)| format!("{object}: {reason}"))
            .collect();
        problems.extend(
            self.fetch_failures
                .iter()
                .map(|(key, reason)| format!("Secret {key}: cannot read it: {reason}")),
        );
        (store, problems)
    }

    /// A Secret kept without its data, which renders do not see.
    fn held_without_data(&self, object: &ObjectRef) -> bool {
        object.kind == Kind::Secret && self.dropped.contains(&object.key)
    }

    pub fn status(&self) -> ClusterStatus {
        ClusterStatus {
            watches: self
                .watches
                .iter()
                .map(|(scope, status)| (scope.to_string(), status.clone()))
                .collect(),
            objects: self.objects.len(),
            malformed: self.malformed.len(),
            secrets_with_data: self
                .objects
                .keys()
                .filter(|o| o.kind == Kind::Secret && !self.dropped.contains(&o.key))
                .count(),
        }
    }
}

/// Kinds whose objects name Secrets whose data is kept.
fn refers_to_secrets(kind: Kind) -> bool {
    matches!(kind, Kind::Ingress | Kind::Gateway | Kind::Service)
}

fn item_ref(item: &Item) -> ObjectRef {
    match item {
        Item::Object(object) => object.object_ref(),
        Item::Malformed { object, .. } => object.clone(),
    }
}

#[cfg(test)]
mod tests;
