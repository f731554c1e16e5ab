//! Backend plans kept from the last render, reused by the next one when no
//! Service and no EndpointSlice changed in between: a change of Ingresses
//! alone then makes no backend plan again.
//!
//! ```text
//! render start ── take ──▶ BackendReuse { last } ── reuse / keep, per backend ──▶ { next }
//! render end   ◀── keep ── next (the plans this render made or reused), and its store
//! ```
//!
//! A plan of [`backend_plans`](super::backend_plans) is a function of its
//! [`BackendKey`] (Service port and the Ingress's backend settings), the
//! Service it names, that Service's EndpointSlices and the renderer's
//! settings, which never change for one renderer; and so is whether its
//! making reports anything. A plan is kept only when its making read
//! nothing else (no CA Secret) and reported nothing (no diagnostic to
//! replay). Kept plans are reused only when the store rendered is a copy of
//! the last render's in which no Service and no EndpointSlice changed
//! (`Store::shares_services_and_endpoints`, which the copy of the last
//! store kept here makes sound: its maps stay alive, so a shared map is
//! the same map, never a new one in reused memory). Then every plan a new
//! render would make from them is the one kept.
//!
//! Plans are kept only by such a render too. Keeping copies every plan,
//! about a seventh of a render of 10,000 Ingresses, and comparing each
//! plan's Service and EndpointSlices one by one after a change of some
//! cost as much as making the plans again: a render after endpoint churn,
//! a renderer's first render and a store built from nothing neither keep
//! nor reuse; from the second render in a row that changes no Service and
//! no EndpointSlice, plans are reused.
//!
//! What is kept is what the last render used, no more: a backend no route
//! names any longer is forgotten with that render. Renders on several
//! threads with one renderer each take what is kept at their start (the
//! others then find nothing and make every plan), and the last to end
//! keeps its own.

use std::collections::HashMap;
use std::sync::Mutex;

use hawser_model::Store;
use std::sync::Arc;

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
    plans: HashMap<BackendKey, Arc<BackendPlan>>,
    /// The store it rendered (a copy shares the store's maps, so it costs
    /// little); none before the first render.
    store: Option<Store>,
}

/// One render's use of the kept plans: those of the last render, and
/// those it made or reused itself, kept at its end.
#[derive(Default)]
pub(crate) struct BackendReuse {
    last: HashMap<BackendKey, Arc<BackendPlan>>,
    next: HashMap<BackendKey, Arc<BackendPlan>>,
    /// No Service and no EndpointSlice changed since the last render.
    unchanged: bool,
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
        let unchanged = last
            .store
            .as_ref()
            .is_some_and(|rendered| rendered.shares_services_and_endpoints(store));
        BackendReuse {
            next: HashMap::with_capacity(if unchanged { last.plans.len() } else { 0 }),
            last: last.plans,
            unchanged,
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
    /// The plan kept for `key`, when no Service and no EndpointSlice
    /// changed since it was made.
    pub(crate) fn reuse(&mut self, key: &BackendKey) -> Option<Arc<BackendPlan>> {
        if !self.unchanged {
            return None;
        }
        // The h2c and TCP twins of a backend are made from the same key.
        if let Some(plan) = self.next.get(key) {
            return Some(plan.clone());
        }
        let (key, plan) = self.last.remove_entry(key)?;
        self.next.insert(key, Arc::clone(&plan));
        Some(plan)
    }

    /// Whether plans made in this render are worth keeping (see the
    /// module's header); a render asks before it copies one.
    pub(crate) fn keeping(&self) -> bool {
        self.unchanged
    }

    /// Keeps `plan`, made for `key` of its Service and EndpointSlices
    /// alone, and with nothing reported.
    pub(crate) fn keep(&mut self, key: &BackendKey, plan: &Arc<BackendPlan>) {
        self.next.insert(key.clone(), Arc::clone(plan));
    }
}
