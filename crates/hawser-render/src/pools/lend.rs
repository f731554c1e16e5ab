//! [`lend`]: the backends of a render that follows another, each in the
//! place of the one it follows.
//!
//! ```text
//! previous (by name):  be_a   be_b        be_c   spare_1 (lent to be_d)  spare_2
//!                       │      │           │      │                       │
//! this render:         be_a   be_b emptied be_c   spare_1 lent to be_d    spare_2 lent to be_e (new)
//! ```
//!
//! Every backend of the previous plan gives exactly one of this render's,
//! under its own name, so the result is in the previous plan's order
//! (sorted by name) and needs no sort. A Service's backend is found by a
//! walk of both lists in name order; only a spare's borrower and a new
//! Service's free spare are looked for. A render that follows another at
//! thousands of backends compares each name once or twice.

use std::collections::VecDeque;
use std::sync::Arc;

use hawser_plan::{BackendPlan, BackendRole, Plan};

use super::{SPARE_SOURCE, emptied, lent};

/// The backends of a render that follows `previous`, declaring exactly the
/// backends it declared, each with its shape. `None` when that cannot be: a
/// backend changed shape, or a new one finds no free spare of its shape.
pub fn lend(wanted: &[Arc<BackendPlan>], previous: &Plan) -> Option<Vec<Arc<BackendPlan>>> {
    let mut wanted = Wanted::new(wanted);
    let was = &previous.backends;
    let mut slots: Vec<Option<Arc<BackendPlan>>> = vec![None; was.len()];
    // A Service's own backend first: one it names keeps it from a spare.
    let in_order = was.is_sorted_by(|a, b| a.name <= b.name);
    let mut cursor = 0;
    for (slot, was) in slots
        .iter_mut()
        .zip(was)
        .filter(|(_, w)| !w.role.is_spare())
    {
        let now = if in_order {
            wanted.at_or_after(&mut cursor, &was.name)
        } else {
            wanted.take_if(&was.name, |_| true)
        };
        *slot = Some(match now {
            Some(now) if Arc::ptr_eq(now, was) || now.same_shape(was) => Arc::clone(now),
            Some(_) => return None,
            None => emptied(was, was.source.clone(), BackendRole::Retired),
        });
    }
    let mut free = FreeSpares::default();
    for (index, (slot, was)) in slots.iter_mut().zip(was).enumerate() {
        if !was.role.is_spare() {
            continue;
        }
        let kept =
            (was.role.lent_to()).and_then(|name| wanted.take_if(name, |now| now.same_shape(was)));
        *slot = match (&was.role, kept) {
            (_, Some(now)) => Some(still_lent(was, now)),
            // Its servers go in this version; another Service may have it in the next.
            (BackendRole::Lent { .. }, None) => {
                Some(emptied(was, SPARE_SOURCE.into(), BackendRole::Released))
            }
            _ => {
                free.add(index, was);
                None
            }
        };
    }
    for now in wanted.left() {
        let index = free.take(now)?;
        slots[index] = Some(lent(&was[index], now));
    }
    let mut backends: Vec<Arc<BackendPlan>> = (slots.into_iter().zip(was))
        .map(|(slot, was)| {
            slot.unwrap_or_else(|| emptied(was, SPARE_SOURCE.into(), BackendRole::Spare))
        })
        .collect();
    // In the previous plan's order: a plan of hawser's is sorted by name;
    // another is sorted here.
    if !in_order {
        backends.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Some(backends)
}

/// A spare lent to `now` again: the same backend when nothing it holds
/// changed (a later step that compares plans finds it the same at once).
fn still_lent(was: &Arc<BackendPlan>, now: &BackendPlan) -> Arc<BackendPlan> {
    let same = match &was.role {
        BackendRole::Lent { name, source } => {
            *name == now.name
                && *source == now.source
                && was.source == now.source
                && was.servers == now.servers
                && was.service == now.service
        }
        _ => false,
    };
    if same {
        Arc::clone(was)
    } else {
        lent(was, now)
    }
}

/// The backends a render wants, sorted by name, and which of them a
/// backend of the previous plan has taken.
struct Wanted<'a> {
    sorted: Vec<&'a Arc<BackendPlan>>,
    taken: Vec<bool>,
}

impl<'a> Wanted<'a> {
    fn new(wanted: &'a [Arc<BackendPlan>]) -> Self {
        let mut sorted: Vec<&Arc<BackendPlan>> = wanted.iter().collect();
        // A render's backends come sorted: then this is one walk.
        if !sorted.is_sorted_by(|a, b| a.name <= b.name) {
            sorted.sort_by(|a, b| a.name.cmp(&b.name));
        }
        let taken = vec![false; sorted.len()];
        Wanted { sorted, taken }
    }

    /// Takes the backend named `name`, looking from `cursor` on, which it
    /// moves past every name before `name`: names asked in order are found
    /// in one walk.
    fn at_or_after(&mut self, cursor: &mut usize, name: &str) -> Option<&'a Arc<BackendPlan>> {
        while self
            .sorted
            .get(*cursor)
            .is_some_and(|b| b.name.as_str() < name)
        {
            *cursor += 1;
        }
        let found = self.sorted.get(*cursor).filter(|b| b.name == name)?;
        if std::mem::replace(&mut self.taken[*cursor], true) {
            return None;
        }
        *cursor += 1;
        Some(found)
    }

    /// Takes the backend named `name`, when no other took it and it is
    /// `fit`.
    fn take_if(
        &mut self,
        name: &str,
        fit: impl Fn(&BackendPlan) -> bool,
    ) -> Option<&'a Arc<BackendPlan>> {
        let index = (self.sorted)
            .binary_search_by(|b| b.name.as_str().cmp(name))
            .ok()
            .filter(|&index| !self.taken[index] && fit(self.sorted[index]))?;
        self.taken[index] = true;
        Some(self.sorted[index])
    }

    /// The backends no backend of the previous plan took: new Services, in
    /// name order.
    fn left(self) -> impl Iterator<Item = &'a Arc<BackendPlan>> {
        (self.sorted.into_iter().zip(self.taken))
            .filter(|(_, taken)| !taken)
            .map(|(backend, _)| backend)
    }
}

/// The free spares of the previous plan, by shape, each pool in the
/// previous plan's order; a spare is known by its place there.
#[derive(Default)]
struct FreeSpares<'a> {
    pools: Vec<(&'a BackendPlan, VecDeque<usize>)>,
}

impl<'a> FreeSpares<'a> {
    fn add(&mut self, index: usize, spare: &'a BackendPlan) {
        match self.pools.iter_mut().find(|(of, _)| of.same_shape(spare)) {
            Some((_, pool)) => pool.push_back(index),
            None => self.pools.push((spare, VecDeque::from([index]))),
        }
    }

    /// The place of the first free spare of `backend`'s shape, taken.
    fn take(&mut self, backend: &BackendPlan) -> Option<usize> {
        let (_, pool) = self
            .pools
            .iter_mut()
            .find(|(of, _)| of.same_shape(backend))?;
        pool.pop_front()
    }
}
