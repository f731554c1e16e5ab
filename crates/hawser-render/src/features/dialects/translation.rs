//! What a front-end works with: one dialect's annotations on an object
//! ([`Their`], each value with the annotation it came from), and the
//! hawser annotations it sets ([`Translation`]), with their origins, so a
//! conflict or a bad value names what the user wrote.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::{ANNOTATION_PREFIX, Annotations, DialectError};

/// One dialect's annotations on an object, by name without the prefix, and
/// which of them a translation used.
pub(crate) struct Their<'a> {
    /// name → (the whole annotation, its value).
    pub(super) annotations: BTreeMap<&'a str, (&'a str, &'a str)>,
    pub(super) used: Vec<&'a str>,
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
pub(crate) struct Value<'a> {
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
        super::super::values::boolean(self.text).map_err(|e| self.invalid(e))
    }
}

/// The hawser annotations a translation sets, with where each came from.
#[derive(Default)]
pub(crate) struct Translation {
    /// `hawser.dev/<name>` → (value, the annotation it came from).
    values: BTreeMap<String, (String, String)>,
    /// Request and answer headers (`request-headers`, `response-headers`):
    /// several annotations may add to them.
    headers: BTreeMap<&'static str, BTreeMap<String, (String, String)>>,
    pub(super) warnings: Vec<String>,
    /// The annotations read (whole names).
    pub(super) consumed: BTreeSet<String>,
}

/// The hawser annotations whose value is `Name: value` lines that several
/// annotations may add to.
const HEADER_LISTS: [&str; 2] = ["request-headers", "response-headers"];

impl Translation {
    pub(super) fn set_as_is(&mut self, key: &str, value: &str) -> Result<(), DialectError> {
        let name = &key[ANNOTATION_PREFIX.len()..];
        if let Some(list) = HEADER_LISTS.iter().find(|l| **l == name) {
            // Checked by the hawser parser once merged; a line that does
            // not parse here is passed on whole for it to refuse.
            let Ok(lines) = super::super::values::header_lines(value) else {
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

    pub(super) fn finish(self, warnings: Vec<String>) -> Annotations<'static> {
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
