//! Annotation dialects: hawser's own (`hawser.dev/`) and the ones of the
//! controllers users move from, read as front-ends onto the one feature
//! model.
//!
//! ```text
//!  nginx.ingress.kubernetes.io/*  ──nginx────────┐
//!  haproxy.org/*, haproxy.com/*   ──haproxytech──┼─► hawser.dev/* (with origins) ──► the hawser parser ──► features
//!  hawser.dev/*                   ───────────────┘
//!  anything else of a known controller ──► foreignAnnotations (refused / warned / ignored)
//! ```
//!
//! A front-end translates each annotation it serves into hawser's dialect,
//! converting formats and applying its controller's documented defaults;
//! the values are then checked by the one parser every dialect shares, and
//! a message about a translated value names the annotation the user wrote.
//! Two annotations asking one feature differently refuse the object, naming
//! both. An annotation a front-end recognises but does not serve falls to
//! the `foreignAnnotations` policy: refused when it is about access control,
//! authentication, rate limits or snippets, reported as ignored otherwise.
//! Where a translation is served differently from its controller, the
//! difference is said (a warning). Which front-ends are on is the setting
//! `annotationFrontends`.

mod explain;
mod haproxytech;
mod nginx;
mod translation;

pub(super) use translation::Value;
use translation::{Their, Translation};

pub use explain::{Verdict, explain};

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{ANNOTATION_PREFIX, ForeignAnnotations};

/// A dialect of annotations hawser reads (`annotationFrontends`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// `hawser.dev/`.
    Hawser,
    /// ingress-nginx's `nginx.ingress.kubernetes.io/`.
    Nginx,
    /// haproxytech's `haproxy.org/` (and `haproxy.com/`).
    Haproxytech,
}

impl Dialect {
    /// Every dialect: the default of `annotationFrontends`.
    pub const ALL: [Dialect; 3] = [Dialect::Hawser, Dialect::Nginx, Dialect::Haproxytech];

    fn prefixes(self) -> &'static [&'static str] {
        match self {
            Dialect::Hawser => &[ANNOTATION_PREFIX],
            Dialect::Nginx => &[nginx::PREFIX],
            Dialect::Haproxytech => haproxytech::PREFIXES,
        }
    }
}

/// What the annotations are on: each dialect reads its own set on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Ingress,
    Service,
}

/// An object's annotations in hawser's dialect, read through the enabled
/// front-ends.
#[derive(Debug, Clone)]
pub struct Annotations<'a> {
    /// `hawser.dev/<name>` → value, for the hawser parser (other
    /// annotations are left out once translated or judged).
    pub map: Cow<'a, BTreeMap<String, String>>,
    /// `hawser.dev/<name>` → the annotation it was translated from.
    origins: BTreeMap<String, String>,
    /// What is ignored, or served otherwise than its controller does.
    pub warnings: Vec<String>,
    /// The annotations of other dialects a front-end read (whole names).
    consumed: BTreeSet<String>,
    /// Read without translation: every `hawser.dev/` annotation is read.
    as_is: bool,
}

impl Annotations<'_> {
    /// Whether a front-end read the annotation `key` (served it, perhaps
    /// with a difference).
    pub fn reads(&self, key: &str) -> bool {
        self.consumed.contains(key) || (self.as_is && key.starts_with(ANNOTATION_PREFIX))
    }

    /// `message` with each translated `hawser.dev/` name replaced by the
    /// annotation the user wrote, so an error names what to fix.
    pub fn in_their_words(&self, message: String) -> String {
        let mut message = message;
        for (ours, theirs) in &self.origins {
            message = replace_name(&message, ours, theirs);
        }
        message
    }
}

/// The Secrets (by name, in `namespace`) an object's annotations name in
/// any dialect: basic-auth users, client-certificate and pod CAs. A cluster
/// source keeps the data of these.
pub fn named_secrets(
    annotations: &BTreeMap<String, String>,
    target: Target,
    namespace: &str,
) -> Vec<String> {
    let Ok(read) = read_annotations(
        annotations,
        target,
        namespace,
        &Dialect::ALL,
        ForeignAnnotations::Ignore,
    ) else {
        return Vec::new(); // refused whole: nothing to keep for it
    };
    [
        super::AUTH_SECRET_ANNOTATION,
        super::CLIENT_AUTH_SECRET_ANNOTATION,
        super::BACKEND_CA_SECRET_ANNOTATION,
    ]
    .iter()
    .filter_map(|key| read.map.get(*key).cloned())
    .collect()
}

/// `text` with `name` replaced by `with` where `name` is a whole name (not
/// followed by a letter, digit or `-`).
fn replace_name(text: &str, name: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(name) {
        let after = &rest[at + name.len()..];
        let whole = !after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-');
        out.push_str(&rest[..at]);
        out.push_str(if whole { with } else { name });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Why an object's annotations cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DialectError {
    #[error("annotation {annotation}: {value:?} is not {expected}")]
    Invalid {
        annotation: String,
        value: String,
        expected: &'static str,
    },
    #[error(
        "annotations {first} and {second} ask {feature} differently; the object is refused rather than served with one of them"
    )]
    Conflict {
        first: String,
        second: String,
        feature: String,
    },
    #[error("annotation {annotation}: {why}; the object is refused rather than served otherwise")]
    Refused { annotation: String, why: String },
    /// The `foreignAnnotations` policy refused an annotation.
    #[error("{0}")]
    Policy(String),
}

/// Reads the annotations of an object in `namespace` through the `enabled`
/// front-ends; what none of them serves falls to `policy`.
pub fn read_annotations<'a>(
    annotations: &'a BTreeMap<String, String>,
    target: Target,
    namespace: &str,
    enabled: &[Dialect],
    policy: ForeignAnnotations,
) -> Result<Annotations<'a>, DialectError> {
    let translated = |d: &Dialect| *d != Dialect::Hawser && enabled.contains(d);
    let hawser_on = enabled.contains(&Dialect::Hawser);
    let needs_translation = annotations.keys().any(|key| {
        Dialect::ALL
            .iter()
            .filter(|d| translated(d))
            .any(|d| d.prefixes().iter().any(|p| key.starts_with(p)))
    });
    if hawser_on && !needs_translation {
        let warnings =
            super::foreign_annotations(annotations, policy, &[]).map_err(DialectError::Policy)?;
        return Ok(Annotations {
            map: Cow::Borrowed(annotations),
            origins: BTreeMap::new(),
            warnings,
            consumed: BTreeSet::new(),
            as_is: true,
        });
    }
    let mut t = Translation::default();
    let mut unserved: BTreeMap<String, String> = BTreeMap::new();
    for (key, value) in annotations {
        if key.starts_with(ANNOTATION_PREFIX) {
            if hawser_on {
                t.set_as_is(key, value)?;
                t.consumed.insert(key.clone());
            } else {
                unserved.insert(key.clone(), value.clone());
            }
        }
    }
    for dialect in Dialect::ALL.iter().filter(|d| translated(d)) {
        let theirs: BTreeMap<&str, (&str, &str)> = annotations
            .iter()
            .filter_map(|(key, value)| {
                let prefix = dialect.prefixes().iter().find(|p| key.starts_with(**p))?;
                Some((&key[prefix.len()..], (key.as_str(), value.as_str())))
            })
            .collect();
        if theirs.is_empty() {
            continue;
        }
        let mut read = Their {
            annotations: theirs,
            used: Vec::new(),
        };
        match dialect {
            Dialect::Nginx => nginx::translate(&mut read, target, namespace, &mut t)?,
            Dialect::Haproxytech => haproxytech::translate(&mut read, target, namespace, &mut t)?,
            Dialect::Hawser => {}
        }
        for (name, (key, value)) in &read.annotations {
            if read.used.contains(name) {
                t.consumed.insert(key.to_string());
            } else {
                unserved.insert(key.to_string(), value.to_string());
            }
        }
    }
    let mut extra = Vec::new();
    if !hawser_on {
        extra.push(ANNOTATION_PREFIX);
    }
    let mut others: BTreeMap<String, String> = annotations
        .iter()
        .filter(|(key, _)| {
            !Dialect::ALL
                .iter()
                .filter(|d| enabled.contains(d))
                .any(|d| d.prefixes().iter().any(|p| key.starts_with(p)))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    others.append(&mut unserved);
    let mut warnings =
        super::foreign_annotations(&others, policy, &extra).map_err(DialectError::Policy)?;
    warnings.append(&mut t.warnings);
    Ok(t.finish(warnings))
}

#[cfg(test)]
mod tests;
