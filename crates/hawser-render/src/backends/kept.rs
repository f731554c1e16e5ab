//! Backend plans kept from the last render, reused by the next one for
//! every Service whose object and EndpointSlices did not change in
//! between: a change of Ingresses, or of one Service's endpoints, makes
//! no other backend plan again.
//!
//! ```text
//! render start ── take ──▶ BackendReuse { last, changed Services } ── reuse / keep, per backend ──▶ { next }
//! render end   ◀── keep ── next (the plans this render made or reused), and its store
//! ```
//!
//! A plan of [`backend_plans`](super::backend_plans) is a function of its
//! [`BackendKey`] (Service port and the Ingress's backend settings), the
//! Service it names, that Service's EndpointSlices and the renderer's
//! settings, which never change for one renderer; and so is whether its
//! making reports anything. A plan is kept only when its making read
//! nothing else (no CA Secret) and reported nothing (no diagnostic to
//! replay). A kept plan is reused when the store rendered is a copy of the
//! last render's and its Service is not among those whose object or
//! EndpointSlices changed since (`Store::services_changed`, found by the
//! store's shared nodes, which the copy of the last store kept here makes
//! sound: its nodes stay alive, so a shared node is the same node, never a
//! new one in reused memory). Then every plan a new render would make
//! from them is the one kept. More than [`CHANGED_LIMIT`] changed objects,
//! a renderer's first render and a store built from nothing reuse no plan.
//!
//! Plans are shared (`Arc`): keeping one copies its key only. What is kept
//! is what the last render used, no more: a backend no route names any
//! longer is forgotten with that render. Renders on several threads with
//! one renderer each take what is kept at their start (the others then
//! find nothing and make every plan), and the last to end keeps its own.
//!
//! When every backend the last render declared was a kept plan, the list
//! of them is kept too, sorted as declared ([`BackendReuse::all_again`]):
//! a render after a change that named no other backend (the routing
//! table's backends kept, see `ingress/kept.rs`) and changed no Service or
//! EndpointSlice would reuse each of them, so it takes the list whole, with
//! no look-up per backend. That is the common change in a large cluster:
//! a route added to a Service that has others.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hawser_model::{ObjectKey, Store};
use hawser_plan::BackendPlan;

use super::BackendKey;

/// More Services and EndpointSlices changed than this since the last
/// render: no plan is reused (each reuse looks through those changed).
pub(crate) const CHANGED_LIMIT: usize = 64;

/// What the last render kept.
#[derive(Default)]
pub(crate) struct KeptBackends {
    last: Mutex<Last>,
    /// Renders that took the last one's backends whole.
    taken_whole: AtomicUsize,
}

#[derive(Default)]
struct Last {
    /// The backend plans it made or reused, by their key.
    plans: HashMap<BackendKey, KeptPlan>,
    /// The store it rendered (a copy shares the store's maps, so it costs
    /// little); none before the first render.
    store: Option<Store>,
    /// The backends it declared, sorted by name, when each was a kept plan
    /// and each key had one backend (no HTTP/2 or TCP twin).
    whole: Option<Vec<Arc<BackendPlan>>>,
}

/// A plan kept, and whether the render under way made or reused it (the
/// others are forgotten at its end). One map for both, so that a plan
/// reused is found with one lookup of its key.
struct KeptPlan {
    plan: Arc<BackendPlan>,
    used: bool,
}

/// One render's use of the kept plans: those of the last render, and
/// those it made or reused itself, kept at its end.
#[derive(Default)]
pub(crate) struct BackendReuse {
    plans: HashMap<BackendKey, KeptPlan>,
    /// The Services whose object or EndpointSlices changed since the last
    /// render; none: no plan kept may be reused.
    changed: Option<BTreeSet<ObjectKey>>,
    /// The last render's backends (see [`Last::whole`]), then this one's.
    whole: Option<Vec<Arc<BackendPlan>>>,
    /// This render took the last one's backends whole: every plan kept is
    /// used again.
    again: bool,
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
        let changed = (last.store.as_ref())
            .and_then(|rendered| rendered.services_changed(store, CHANGED_LIMIT));
        BackendReuse {
            plans: last.plans,
            changed,
            whole: last.whole,
            again: false,
        }
    }

    /// Keeps what `reuse`'s render of `store` made or reused, for the next
    /// one.
    pub(crate) fn keep(&self, reuse: BackendReuse, store: &Store) {
        let mut plans = reuse.plans;
        if reuse.again {
            self.taken_whole.fetch_add(1, Ordering::Relaxed);
        } else {
            plans.retain(|_, kept| std::mem::replace(&mut kept.used, false));
        }
        if let Ok(mut last) = self.last.lock() {
            *last = Last {
                plans,
                store: Some(store.clone()),
                whole: reuse.whole,
            };
        }
    }
}

impl std::fmt::Debug for KeptBackends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.last.lock().map(|last| last.plans.len()).unwrap_or(0);
        f.debug_struct("KeptBackends")
            .field("kept", &kept)
            .field("taken_whole", &self.taken_whole())
            .finish()
    }
}

impl KeptBackends {
    /// How many renders took the last one's backends whole.
    pub(crate) fn taken_whole(&self) -> usize {
        self.taken_whole.load(Ordering::Relaxed)
    }
}

impl BackendReuse {
    /// The plan kept for `key`, when its Service and EndpointSlices did
    /// not change since it was made.
    pub(crate) fn reuse(&mut self, key: &BackendKey) -> Option<Arc<BackendPlan>> {
        let changed = self.changed.as_ref()?;
        let named =
            |service: &ObjectKey| service.namespace == key.namespace && service.name == key.service;
        if changed.iter().any(named) {
            return None;
        }
        // The h2c and TCP twins of a backend are made from the same key,
        // and find it used already.
        let kept = self.plans.get_mut(key)?;
        kept.used = true;
        Some(Arc::clone(&kept.plan))
    }

    /// The last render's backends, when this render would declare the same:
    /// each a kept plan, no Service or EndpointSlice changed since, and
    /// `named_again` (the routes name the same backends, first by the same
    /// objects, and nothing else names any).
    pub(crate) fn all_again(&mut self, named_again: bool) -> Option<Vec<Arc<BackendPlan>>> {
        let unchanged = self.changed.as_ref().is_some_and(BTreeSet::is_empty);
        if !(named_again && unchanged) {
            return None;
        }
        let backends = self.whole.clone()?;
        self.again = true;
        Some(backends)
    }

    /// Says which backends this render declared, having made or reused
    /// each with this reuse; `one_each`: each key gave one backend. Kept
    /// whole for the next render when each is a kept plan.
    pub(crate) fn declared(&mut self, backends: &[Arc<BackendPlan>], one_each: bool) {
        let used = self.plans.values().filter(|kept| kept.used).count();
        let each_kept = one_each && used == backends.len();
        self.whole = each_kept.then(|| backends.to_vec());
    }

    /// Makes room for `more` plans kept, at once rather than as they come.
    pub(crate) fn expect(&mut self, more: usize) {
        self.plans.reserve(more);
    }

    /// Keeps `plan`, made for `key` of its Service and EndpointSlices
    /// alone, and with nothing reported.
    pub(crate) fn keep(&mut self, key: &BackendKey, plan: &Arc<BackendPlan>) {
        let plan = Arc::clone(plan);
        self.plans
            .insert(key.clone(), KeptPlan { plan, used: true });
    }
}
