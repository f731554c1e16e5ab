//! Backend plans kept from the last render, reused by the next one when
//! what they were made of has not changed: a change of one Service or one
//! Ingress then remakes one backend, not all of them.
//!
//! ```text
//! render start ── take ──▶ BackendReuse { last } ── reuse / keep, per backend ──▶ { next }
//! render end   ◀── keep ── next (the plans this render made or reused)
//! ```
//!
//! A plan of [`backend_plans`](super::backend_plans) is a function of its
//! [`BackendKey`] (Service port and the Ingress's backend settings), the
//! Service it names, that Service's EndpointSlices and the renderer's
//! settings, which never change for one renderer; and so is whether its
//! making reports anything. A plan is kept only when its making read
//! nothing else (no CA Secret) and reported nothing (no diagnostic to
//! replay), and reused only when the Service and its EndpointSlices are
//! the ones it was made of: the very objects, which the store shares
//! behind `Arc`s. The plan keeps them, so an `Arc` found again at the same
//! address is the same object, never a new one in reused memory; and the
//! store never changes an object in place, it replaces it. So the reused
//! plan is the one a new render would make. (Comparing the objects by
//! equality instead cost as much as making the plan.) When no Service and
//! no EndpointSlice changed at all since the last render (its store and
//! this one share them whole, see `Store::shares_services_and_endpoints`),
//! every plan kept is reused without looking its objects up: the lookups
//! cost about as much as making the plan.
//!
//! Keeping costs a copy of each plan, about a seventh of a render of
//! 10,000 Ingresses, which only reuse pays back, and only a store that is a
//! copy of the last one (sharing its objects) can reuse anything. So plans
//! are kept only by a render of a copy of the store the last render read
//! (`Store::is_copy_of`): never by a renderer's first render, nor for a
//! source that builds each store from nothing.
//!
//! What is kept is what the last render used, no more: a backend no route
//! names any longer is forgotten with that render. Renders on several
//! threads with one renderer each take what is kept at their start (the
//! others then find nothing and make every plan), and the last to end
//! keeps its own.

use std::collections::HashMap;
use std::sync::Mutex;

use std::sync::Arc;

use hawser_model::{EndpointSlice, ObjectKey, Service, Store};
use hawser_plan::BackendPlan;

use super::BackendKey;

/// What the last render kept.
#[derive(Default)]
pub(crate) struct KeptBackends {
    last: Mutex<Last>,
}

#[derive(Default)]
struct Last {
    /// The backend plans it made or reused, by their key.
    plans: HashMap<BackendKey, Kept>,
    /// The store it rendered (a copy shares the store's objects, so it
    /// costs little); none before the first render.
    store: Option<Store>,
}

/// A plan and what it was made of.
struct Kept {
    service: Arc<Service>,
    slices: Vec<Arc<EndpointSlice>>,
    plan: BackendPlan,
}

impl Kept {
    /// Whether the Service `key` and its EndpointSlices in `store` are the
    /// very objects this plan was made of.
    fn made_of(&self, key: &ObjectKey, store: &Store) -> bool {
        store
            .shared_service(key)
            .is_some_and(|service| Arc::ptr_eq(service, &self.service))
            && store
                .shared_endpoint_slices_for(key)
                .map(Arc::as_ptr)
                .eq(self.slices.iter().map(Arc::as_ptr))
    }
}

/// One render's use of the kept plans: those of the last render, and
/// those it made or reused itself, kept at its end.
#[derive(Default)]
pub(crate) struct BackendReuse {
    last: HashMap<BackendKey, Kept>,
    next: HashMap<BackendKey, Kept>,
    /// No Service and no EndpointSlice changed since the last render.
    unchanged: bool,
    /// The store is a copy of the last one: plans made are worth keeping.
    keeping: bool,
}

impl KeptBackends {
    /// What the last render kept, for this one's `store` (nothing while
    /// another render holds it).
    pub(crate) fn take(&self, store: &Store) -> BackendReuse {
        let last = self
            .last
            .lock()
            .map(|mut last| std::mem::take(&mut *last))
            .unwrap_or_default();
        BackendReuse {
            next: HashMap::with_capacity(last.plans.len()),
            unchanged: last
                .store
                .as_ref()
                .is_some_and(|r| r.shares_services_and_endpoints(store)),
            keeping: last.store.as_ref().is_some_and(|r| r.is_copy_of(store)),
            last: last.plans,
        }
    }

    /// Keeps what `reuse`'s render of `store` made or reused, for the next
    /// one.
    pub(crate) fn keep(&self, reuse: BackendReuse, store: &Store) {
        if let Ok(mut last) = self.last.lock() {
            *last = Last {
                plans: reuse.next,
                store: Some(store.clone()),
            };
        }
    }
}

impl std::fmt::Debug for KeptBackends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.last.lock().map(|last| last.plans.len()).unwrap_or(0);
        f.debug_struct("KeptBackends").field("kept", &kept).finish()
    }
}

impl BackendReuse {
    /// The plan kept for `key`, when it was made of the Service `service`
    /// and its EndpointSlices in `store`.
    pub(crate) fn reuse(
        &mut self,
        key: &BackendKey,
        service: &ObjectKey,
        store: &Store,
    ) -> Option<BackendPlan> {
        let made_of = |kept: &Kept| self.unchanged || kept.made_of(service, store);
        // The h2c and TCP twins of a backend are made from the same key.
        if let Some(kept) = self.next.get(key) {
            return made_of(kept).then(|| kept.plan.clone());
        }
        let (key, kept) = self.last.remove_entry(key)?;
        if !made_of(&kept) {
            return None;
        }
        let plan = kept.plan.clone();
        self.next.insert(key, kept);
        Some(plan)
    }

    /// Whether plans made in this render are worth keeping (see the
    /// module's header); a render asks before it copies one.
    pub(crate) fn keeping(&self) -> bool {
        self.keeping
    }

    /// Keeps `plan`, made for `key` of the Service `service` and its
    /// EndpointSlices in `store` alone, and with nothing reported.
    pub(crate) fn keep(
        &mut self,
        key: &BackendKey,
        service: &ObjectKey,
        store: &Store,
        plan: &BackendPlan,
    ) {
        let Some(shared) = store.shared_service(service) else {
            return;
        };
        let kept = Kept {
            service: Arc::clone(shared),
            slices: store
                .shared_endpoint_slices_for(service)
                .map(Arc::clone)
                .collect(),
            plan: plan.clone(),
        };
        self.next.insert(key.clone(), kept);
    }
}
