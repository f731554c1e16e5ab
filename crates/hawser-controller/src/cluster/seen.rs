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
    /// How many objects refer to each Secret (kept ones aside), and what
    /// each object refers to: kept up to date object by object, since a
    /// walk of every Ingress on every change cost more than the render of
    /// one.
    referrers: BTreeMap<ObjectKey, usize>,
    refers: BTreeMap<ObjectRef, Vec<ObjectKey>>,
    /// Secrets whose referrers changed since the data was last settled
    /// ([`Cluster::settle_references`]).
    unsettled: BTreeSet<ObjectKey>,
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
            referrers: BTreeMap::new(),
            refers: BTreeMap::new(),
            unsettled: BTreeSet::new(),
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
                        if self.dropped.contains(&key) && self.is_referenced(&key) {
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
                    self.store(item, effect);
                    self.settle_references(effect);
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
                // References are settled once, after the whole list: a
                // Secret still referred to keeps its data throughout.
                for object in gone {
                    self.remove(&object, effect);
                }
                for item in listed {
                    self.store(item, effect);
                }
                let watch = self.watch(&scope);
                watch.synced = true;
                watch.last_error = None;
                self.settle_references(effect);
                if refers_to_secrets(scope.kind) && self.ingresses_synced() {
                    self.drop_unreferenced_data();
                }
                effect.watch_status = true;
                effect.changed = true;
            }
            Change::Applied(item) => {
                self.store(item, effect);
                self.settle_references(effect);
            }
            Change::Deleted(object) => {
                self.remove(&object, effect);
                self.settle_references(effect);
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

    /// Stores one object (or its problem), with the Secrets it refers to.
    fn store(&mut self, item: Item, effect: &mut Effect) {
        match item {
            Item::Object(mut object) => {
                let object_ref = object.object_ref();
                let was_malformed = self.malformed.remove(&object_ref).is_some();
                // Until every Ingress watch has listed, references are not
                // known: data is kept for now (and swept then), rather than
                // dropped and read again one Secret at a time.
                let references_known = self.ingresses_synced();
                if let Object::Secret(secret) = &mut object {
                    if self.is_referenced(&secret.key) || !references_known {
                        self.dropped.remove(&secret.key);
                    } else {
                        secret.drop_data();
                        self.dropped.insert(secret.key.clone());
                    }
                }
                // An update that changes nothing hawser keeps (a status
                // write, hawser's own included) renders nothing.
                if was_malformed || self.objects.get(&object_ref) != Some(&object) {
                    effect.changed = true;
                }
                self.refer(&object_ref, secrets_named_by(&object));
                // Touched even when equal: whether a Secret is held
                // without data may have changed alone.
                self.touched.insert(object_ref.clone());
                self.objects.insert(object_ref, object);
            }
            Item::Malformed { object, reason } => {
                effect.changed = true;
                self.remove(&object, effect);
                self.malformed.insert(object, reason);
            }
        }
    }

    /// Removes one object (or its problem), and what it referred to.
    fn remove(&mut self, object: &ObjectRef, effect: &mut Effect) {
        effect.changed = true;
        self.malformed.remove(object);
        self.objects.remove(object);
        self.refer(object, Vec::new());
        self.touched.insert(object.clone());
        if object.kind == Kind::Secret {
            self.dropped.remove(&object.key);
            self.fetch_failures.remove(&object.key);
        }
    }

    /// Whether a Secret's data is kept: an object refers to it, or the
    /// options keep it.
    fn is_referenced(&self, key: &ObjectKey) -> bool {
        self.kept.contains(key) || self.referrers.contains_key(key)
    }

    /// Notes that `by` now refers to the Secrets `now` (sorted, each once):
    /// the counts change at once, the data when settled.
    fn refer(&mut self, by: &ObjectRef, now: Vec<ObjectKey>) {
        let before = if now.is_empty() {
            self.refers.remove(by)
        } else {
            self.refers.insert(by.clone(), now.clone())
        };
        let before = before.unwrap_or_default();
        if before == now {
            return;
        }
        for key in before {
            if let Some(count) = self.referrers.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    self.referrers.remove(&key);
                }
            }
            self.unsettled.insert(key);
        }
        for key in now {
            *self.referrers.entry(key.clone()).or_default() += 1;
            self.unsettled.insert(key);
        }
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
        let unreferenced: Vec<ObjectKey> = self
            .objects
            .keys()
            .filter(|object| object.kind == Kind::Secret && !self.is_referenced(&object.key))
            .map(|object| object.key.clone())
            .collect();
        for key in unreferenced {
            self.drop_data(key);
        }
    }

    /// Settles the data of the Secrets whose referrers changed: drops the
    /// data of those no longer referred to, and asks for those newly
    /// referred to whose data was dropped.
    fn settle_references(&mut self, effect: &mut Effect) {
        for key in std::mem::take(&mut self.unsettled) {
            if !self.is_referenced(&key) {
                self.drop_data(key);
            } else if self.dropped.contains(&key) && self.fetching.insert(key.clone()) {
                effect.fetch.push(key);
            }
        }
    }

    /// Drops the data of Secret `key`, if it is held with its data.
    fn drop_data(&mut self, key: ObjectKey) {
        let object_ref = ObjectRef::new(Kind::Secret, key);
        if let Some(Object::Secret(secret)) = self.objects.get_mut(&object_ref)
            && !self.dropped.contains(&object_ref.key)
        {
            secret.drop_data();
            self.dropped.insert(object_ref.key.clone());
            self.touched.insert(object_ref);
        }
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
            // The Secrets only, found in order (objects sort by kind
            // first): this is reported before every render, and the other
            // objects are thousands.
            secrets_with_data: self
                .objects
                .range(ObjectRef::new(Kind::Secret, ObjectKey::new("", ""))..)
                .map(|(o, _)| o)
                .take_while(|o| o.kind == Kind::Secret)
                .filter(|o| !self.dropped.contains(&o.key))
                .count(),
        }
    }
}

/// The Secrets an object names, whose data is kept (sorted, each once): an
/// Ingress's TLS Secrets and those of its annotations (the users of its
/// basic authentication, the CAs of its client certificates and its pods,
/// in any annotation dialect), the CAs a Service verifies its pods with, a
/// Gateway's listener certificates wherever they are (a grant is checked
/// when the Gateway is programmed, not here).
fn secrets_named_by(object: &Object) -> Vec<ObjectKey> {
    let mut named: BTreeSet<ObjectKey> = BTreeSet::new();
    match object {
        Object::Ingress(ingress) => {
            let namespace = &ingress.key.namespace;
            named.extend(
                ingress
                    .tls
                    .iter()
                    .filter_map(|tls| tls.secret_name.as_ref())
                    .map(|name| ObjectKey::new(namespace, name)),
            );
            named.extend(
                named_secrets(&ingress.annotations, Target::Ingress, namespace)
                    .iter()
                    .map(|name| ObjectKey::new(namespace, name)),
            );
        }
        Object::Service(service) => {
            let namespace = &service.key.namespace;
            named.extend(
                named_secrets(&service.annotations, Target::Service, namespace)
                    .iter()
                    .map(|name| ObjectKey::new(namespace, name)),
            );
        }
        Object::Gateway(gateway) => {
            let refs = gateway
                .listeners
                .iter()
                .filter_map(|l| l.tls.as_ref())
                .flat_map(|tls| &tls.certificate_refs)
                .filter(|r| r.group.is_empty() && r.kind == "Secret");
            named.extend(refs.map(|r| {
                let namespace = r.namespace.as_deref().unwrap_or(&gateway.key.namespace);
                ObjectKey::new(namespace, &r.name)
            }));
        }
        _ => {}
    }
    named.into_iter().collect()
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
