//! Objects of the kinds a configuration adds to what hawser reads
//! (`spec.watch.extraResources`): kept as their JSON, since hawser knows
//! nothing of them; templates read them as `resources.<Kind>`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::ObjectKey;

/// Extra objects by kind, then namespace/name: sorted, so a render of the
/// same objects is byte-identical. Each kind's objects are shared between
/// clones (a kind is only ever replaced whole), so cloning a store stays cheap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtraResources(BTreeMap<String, Arc<BTreeMap<ObjectKey, Value>>>);

impl ExtraResources {
    /// Makes `objects` all there is of `kind`.
    pub fn replace(&mut self, kind: &str, objects: BTreeMap<ObjectKey, Value>) {
        self.0.insert(kind.to_string(), Arc::new(objects));
    }

    /// Every kind, with its objects in namespace/name order. A kind that is
    /// watched but has no objects is listed, empty.
    pub fn by_kind(&self) -> impl Iterator<Item = (&str, impl Iterator<Item = &Value>)> {
        self.0
            .iter()
            .map(|(kind, objects)| (kind.as_str(), objects.values()))
    }

    pub fn len(&self) -> usize {
        self.0.values().map(|objects| objects.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
