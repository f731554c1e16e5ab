//! What each annotation of an object comes to (for `hawser migrate`):
//! served, served with a difference, ignored, refused, or not one any
//! dialect has.
//!
//! A refusal stops the reading of an object at its first bad annotation;
//! to name every one, the refused annotation is set aside and the rest is
//! read again, until the rest reads whole.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{ForeignAnnotations, Target, read_annotations, replace_name};
use crate::config::Settings;

/// What becomes of one annotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "why", rename_all = "lowercase")]
pub enum Verdict {
    /// Served as its controller serves it.
    Served,
    /// Served, otherwise than its controller: how.
    Differs(String),
    /// Not served and not about access control: the object is served
    /// without it.
    Ignored,
    /// About access control, auth, rate limits or snippets, and would be
    /// dropped under the `foreignAnnotations` setting given: the object
    /// would be served without that protection.
    Lost,
    /// Refuses the object: why.
    Refused(String),
    /// Not an annotation any controller hawser knows reads.
    NotRead,
}

/// The verdict on each of `annotations` (of an object in `namespace`) under
/// `settings`.
pub fn explain(
    annotations: &BTreeMap<String, String>,
    target: Target,
    namespace: &str,
    settings: &Settings,
) -> BTreeMap<String, Verdict> {
    let mut verdicts = BTreeMap::new();
    let mut left = annotations.clone();
    loop {
        let read = read_annotations(
            &left,
            target,
            namespace,
            &settings.annotation_frontends,
            settings.foreign_annotations,
        );
        let refusal = match &read {
            Err(e) => Some(e.to_string()),
            Ok(read) => checked(read, target, settings).err(),
        };
        if let Some(message) = refusal {
            let named: Vec<String> = left
                .keys()
                .filter(|key| replace_name(&message, key, "") != message)
                .cloned()
                .collect();
            if named.is_empty() {
                for key in left.keys() {
                    verdicts.insert(key.clone(), Verdict::Refused(message.clone()));
                }
                return verdicts;
            }
            for key in named {
                left.remove(&key);
                verdicts.insert(key, Verdict::Refused(message.clone()));
            }
            continue;
        }
        let Ok(read) = read else {
            return verdicts;
        };
        for key in left.keys() {
            let said = |what: &str| {
                read.warnings
                    .iter()
                    .find_map(|w| w.strip_prefix(&format!("annotation {key} {what}")))
                    .map(str::to_string)
            };
            let verdict = if let Some(how) = said("is served with a difference: ") {
                Verdict::Differs(how)
            } else if read.reads(key) {
                Verdict::Served
            } else if said("is not served by hawser and is ignored").is_some()
                || settings.foreign_annotations == ForeignAnnotations::Ignore
                    && super::super::foreign::FOREIGN_PREFIXES
                        .iter()
                        .any(|p| key.starts_with(p))
            {
                if super::super::foreign::is_security(key) {
                    Verdict::Lost
                } else {
                    Verdict::Ignored
                }
            } else {
                Verdict::NotRead
            };
            verdicts.insert(key.clone(), verdict);
        }
        return verdicts;
    }
}

/// The hawser parser's verdict on what the front-ends read.
fn checked(
    read: &super::Annotations<'_>,
    target: Target,
    settings: &Settings,
) -> Result<(), String> {
    let result = match target {
        Target::Ingress => super::super::ingress_features(&read.map, settings).map(|_| ()),
        Target::Service => {
            let ours: BTreeMap<&str, &str> = read
                .map
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix(super::ANNOTATION_PREFIX)?, v.as_str())))
                .collect();
            super::super::backend_features(&ours).map(|_| ())
        }
    };
    result.map_err(|e| read.in_their_words(e.to_string()))
}
