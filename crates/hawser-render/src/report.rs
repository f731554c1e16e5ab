//! What a render says about the objects it read: which it rejected and why,
//! which it ignored, and what it served with a caveat.

use std::fmt;

use hawser_model::ObjectRef;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The object contributes nothing to this render; the rest still renders.
    Rejected,
    /// The object is served, with a caveat (a missing Service, a lost conflict).
    Warning,
    /// The object is not ours (another IngressClass) and is left alone.
    Ignored,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub object: ObjectRef,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = match self.severity {
            Severity::Rejected => "rejected",
            Severity::Warning => "warning",
            Severity::Ignored => "ignored",
        };
        write!(f, "{label}: {}: {}", self.object, self.message)
    }
}

/// Collects diagnostics during a render; sorted and deduplicated at the end.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics(Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, severity: Severity, object: &ObjectRef, message: impl Into<String>) {
        self.0.push(Diagnostic {
            severity,
            object: object.clone(),
            message: message.into(),
        });
    }

    pub fn reject(&mut self, object: &ObjectRef, message: impl Into<String>) {
        self.push(Severity::Rejected, object, message);
    }

    pub fn warn(&mut self, object: &ObjectRef, message: impl Into<String>) {
        self.push(Severity::Warning, object, message);
    }

    /// How many were reported so far: a part of a render that adds none
    /// reported nothing.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Adds what another part of a render reported (kept from an earlier
    /// render, when that part was not made again).
    pub fn extend(&mut self, reported: &[Diagnostic]) {
        self.0.extend_from_slice(reported);
    }

    /// What was reported, as it was reported (neither sorted nor
    /// deduplicated), to be kept.
    pub fn into_reported(self) -> Vec<Diagnostic> {
        self.0
    }

    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.0.sort();
        self.0.dedup();
        self.0
    }
}
