//! File digests of one build, without hashing what the last build hashed.

use std::collections::HashMap;

use hawser_plan::digest;
use hawser_render::Rendered;

use super::Built;

/// File digests of one build: taken from the last build where a file is
/// byte for byte what it was (comparing costs a fraction of hashing), and
/// a twinned map's second copy from its first (they are equal).
pub(super) struct Digests<'a> {
    /// The last build's render, and its digests by path.
    last: Option<(&'a Rendered, HashMap<&'a str, &'a str>)>,
    /// Each twinned map's second copy → its first.
    twins: HashMap<&'a str, &'a str>,
    /// This build's digests so far, by path.
    taken: HashMap<&'a str, (&'a [u8], String)>,
}

impl<'a> Digests<'a> {
    pub(super) fn new(rendered: &'a Rendered, last: Option<&'a Built>) -> Self {
        let last = last.map(|last| {
            let digests = last
                .files
                .iter()
                .map(|f| (f.path.as_str(), f.digest.as_str()))
                .collect();
            (&*last.rendered, digests)
        });
        let twins = rendered
            .plan
            .maps
            .iter()
            .filter_map(|m| Some((m.twin.as_deref()?, m.path.as_str())))
            .collect();
        Digests {
            last,
            twins,
            taken: HashMap::new(),
        }
    }

    pub(super) fn of(&mut self, path: &'a str, content: &'a [u8]) -> String {
        let twin_of = self.twins.get(path).and_then(|first| self.taken.get(first));
        let from_twin = twin_of.and_then(|(first, d)| (*first == content).then(|| d.clone()));
        let kept = || {
            let (rendered, digests) = self.last.as_ref()?;
            let file = rendered.files.get(path)?;
            (file.content == content).then(|| digests.get(path).map(|d| d.to_string()))?
        };
        let d = from_twin.or_else(kept).unwrap_or_else(|| digest(content));
        self.taken.insert(path, (content, d.clone()));
        d
    }
}
