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

/// One dialect's annotations on an object, by name without the prefix, and
/// which of them a translation used.
pub(super) struct Their<'a> {
    /// name → (the whole annotation, its value).
    annotations: BTreeMap<&'a str, (&'a str, &'a str)>,
    used: Vec<&'a str>,
}

impl<'a> Their<'a> {
    /// The value of `name`, marked used; `None` when not set.
    pub(super) fn take(&mut self, name: &str) -> Option<Value<'a>> {
        let (&key, &(whole, value)) = self.annotations.get_key_value(name)?;
        self.used.push(key);
        Some(Value {
            annotation: whole,
            text: value,
        })
    }

    /// Whether `name` is set (without using it).
    pub(super) fn has(&self, name: &str) -> bool {
        self.annotations.contains_key(name)
    }
}

/// A dialect annotation's value, with the whole annotation it came from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Value<'a> {
    pub annotation: &'a str,
    pub text: &'a str,
}

impl Value<'_> {
    pub(super) fn invalid(&self, expected: &'static str) -> DialectError {
        DialectError::Invalid {
            annotation: self.annotation.to_string(),
            value: self.text.to_string(),
            expected,
        }
    }

    pub(super) fn refused(&self, why: impl Into<String>) -> DialectError {
        DialectError::Refused {
            annotation: self.annotation.to_string(),
            why: why.into(),
        }
    }

    /// `true` or `false`.
    pub(super) fn boolean(&self) -> Result<bool, DialectError> {
        super::values::boolean(self.text).map_err(|e| self.invalid(e))
    }
}

/// The hawser annotations a translation sets, with where each came from.
#[derive(Default)]
pub(super) struct Translation {
    /// `hawser.dev/<name>` → (value, the annotation it came from).
    values: BTreeMap<String, (String, String)>,
    /// Request and answer headers (`request-headers`, `response-headers`):
    /// several annotations may add to them.
    headers: BTreeMap<&'static str, BTreeMap<String, (String, String)>>,
    warnings: Vec<String>,
    /// The annotations read (whole names).
    consumed: BTreeSet<String>,
}

/// The hawser annotations whose value is `Name: value` lines that several
/// annotations may add to.
const HEADER_LISTS: [&str; 2] = ["request-headers", "response-headers"];

impl Translation {
    fn set_as_is(&mut self, key: &str, value: &str) -> Result<(), DialectError> {
        let name = &key[ANNOTATION_PREFIX.len()..];
        if let Some(list) = HEADER_LISTS.iter().find(|l| **l == name) {
            // Checked by the hawser parser once merged; a line that does
            // not parse here is passed on whole for it to refuse.
            let Ok(lines) = super::values::header_lines(value) else {
                self.values
                    .insert(key.to_string(), (value.to_string(), key.to_string()));
                return Ok(());
            };
            for (header, text) in lines {
                self.header(list, &header, &text, key)?;
            }
            return Ok(());
        }
        self.values
            .insert(key.to_string(), (value.to_string(), key.to_string()));
        Ok(())
    }

    /// Sets `hawser.dev/<name>` to `value`, as `from` asks.
    pub(super) fn set(
        &mut self,
        name: &str,
        value: impl Into<String>,
        from: &str,
    ) -> Result<(), DialectError> {
        let key = format!("{ANNOTATION_PREFIX}{name}");
        let value = value.into();
        match self.values.get(&key) {
            Some((existing, origin)) if *existing != value && origin != from => {
                Err(DialectError::Conflict {
                    first: origin.clone(),
                    second: from.to_string(),
                    feature: feature_name(name),
                })
            }
            Some(_) => Ok(()),
            None => {
                self.values.insert(key, (value, from.to_string()));
                Ok(())
            }
        }
    }

    /// Sets the request (`list` = `request-headers`) or answer header
    /// `name` to `value`, as `from` asks.
    pub(super) fn header(
        &mut self,
        list: &'static str,
        name: &str,
        value: &str,
        from: &str,
    ) -> Result<(), DialectError> {
        let headers = self.headers.entry(list).or_default();
        let name = name.to_ascii_lowercase();
        match headers.get(&name) {
            Some((existing, origin)) if existing != value => Err(DialectError::Conflict {
                first: origin.clone(),
                second: from.to_string(),
                feature: format!("header {name}"),
            }),
            Some(_) => Ok(()),
            None => {
                headers.insert(name, (value.to_string(), from.to_string()));
                Ok(())
            }
        }
    }

    /// `from` is served, but not as its controller serves it: `how`.
    pub(super) fn differs(&mut self, from: &str, how: &str) {
        self.warnings.push(format!(
            "annotation {from} is served with a difference: {how}"
        ));
    }

    fn finish(self, warnings: Vec<String>) -> Annotations<'static> {
        let mut map = BTreeMap::new();
        let mut origins = BTreeMap::new();
        for (key, (value, origin)) in self.values {
            if origin != key {
                origins.insert(key.clone(), origin);
            }
            map.insert(key, value);
        }
        for (list, headers) in self.headers {
            let key = format!("{ANNOTATION_PREFIX}{list}");
            let lines: Vec<String> = headers
                .iter()
                .map(|(name, (value, _))| format!("{name}: {value}"))
                .collect();
            if let Some((_, (_, origin))) = headers.iter().find(|(_, (_, o))| *o != key) {
                origins.insert(key.clone(), origin.clone());
            }
            map.insert(key, lines.join("\n"));
        }
        Annotations {
            map: Cow::Owned(map),
            origins,
            warnings,
            consumed: self.consumed,
            as_is: false,
        }
    }
}

/// How a conflict names the feature two annotations ask.
fn feature_name(name: &str) -> String {
    format!("what {ANNOTATION_PREFIX}{name} sets")
}

#[cfg(test)]
mod tests;
