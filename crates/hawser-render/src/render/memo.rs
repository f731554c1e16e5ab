//! The last haproxy.cfg a renderer wrote, kept with what identifies the
//! context it was written from, so a render whose context is the same
//! reuses it.
//!
//! ```text
//! context ─┬─ plan.backends ──────────────── equal to the kept ones? ─┐
//!          └─ the rest ──serialize──▶ SHA-256 ── same as the kept one? ┴─▶ its haproxy.cfg and structure digest
//!                                      └─ no ─▶ templates, digest ─▶ kept as the last one
//! ```
//!
//! haproxy.cfg and its structure digest are functions of the context (the
//! templates of a renderer never change; the digest reads haproxy.cfg and
//! the plan's backends, which are in the context). A change that only
//! touches what the context leaves out (map entries: a route added or
//! moved, see the `reads` module) or nothing at all keeps the context, and
//! then skips the templates and the digest, most of a render's time.
//!
//! The context is compared in two parts, which together are all of it:
//!
//! - the plan's backends, the bulk of it (a backend and its servers per
//!   Service port), by equality with the backends kept, which are a copy.
//!   `BackendPlan`'s equality compares every field it serializes (both are
//!   derived, over strings, integers, enums, options and lists), so equal
//!   backends serialize, and are seen by templates, the same;
//! - the rest (the context with no backends in the plan) by a SHA-256 of
//!   its JSON, which tells apart any two rests the templates could tell
//!   apart: the types are the same on both sides, and JSON writes each of
//!   their values differently (there is no float in it, whose NaN JSON
//!   would write as null).
//!
//! Serializing the backends too, as was done before, made the key cost a
//! tenth of a cold render; comparing them costs little, and a miss copies
//! them once.

use std::sync::{Arc, Mutex};

use hawser_plan::BackendPlan;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// What identifies a template context less its backends: the SHA-256 of
/// the JSON of the context with none in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RestKey([u8; 32]);

impl RestKey {
    /// The key of `rest` (the context with no backends in the plan); none
    /// when it does not serialize as JSON (then it is rendered, and the
    /// error, if any, comes from the templates).
    pub(super) fn of(rest: &impl Serialize) -> Option<RestKey> {
        // JSON is written a token at a time; the hasher takes blocks.
        let mut out = std::io::BufWriter::with_capacity(1 << 16, HashWriter(Sha256::new()));
        serde_json::to_writer(&mut out, rest).ok()?;
        let hasher = out.into_inner().ok()?;
        Some(RestKey(hasher.0.finalize().into()))
    }
}

/// The last haproxy.cfg written, behind a lock: renders may run on
/// several threads with one renderer.
#[derive(Default)]
pub(super) struct ConfigMemo {
    last: Mutex<Option<Written>>,
}

struct Written {
    rest: RestKey,
    backends: Vec<Arc<BackendPlan>>,
    config: String,
    structure_digest: String,
}

impl ConfigMemo {
    /// haproxy.cfg and its structure digest, when the last one written was
    /// written from a context whose rest has this key and whose plan
    /// declares these backends.
    pub(super) fn get(
        &self,
        rest: RestKey,
        backends: &[Arc<BackendPlan>],
    ) -> Option<(String, String)> {
        let last = self.last.lock().ok()?;
        let written = last
            .as_ref()
            .filter(|w| w.rest == rest && w.backends == backends)?;
        Some((written.config.clone(), written.structure_digest.clone()))
    }

    /// Keeps `config` as the last one written, from a context whose rest
    /// has this key and whose plan declares these backends.
    pub(super) fn put(
        &self,
        rest: RestKey,
        backends: &[Arc<BackendPlan>],
        config: &str,
        structure_digest: &str,
    ) {
        if let Ok(mut last) = self.last.lock() {
            match last.as_mut() {
                // Reuses the buffers: haproxy.cfg is megabytes in a large cluster.
                Some(written) => {
                    written.rest = rest;
                    written.backends.clear();
                    written.backends.extend_from_slice(backends);
                    written.config.clear();
                    written.config.push_str(config);
                    written.structure_digest.clear();
                    written.structure_digest.push_str(structure_digest);
                }
                None => {
                    *last = Some(Written {
                        rest,
                        backends: backends.to_vec(),
                        config: config.to_string(),
                        structure_digest: structure_digest.to_string(),
                    });
                }
            }
        }
    }
}

impl std::fmt::Debug for ConfigMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.last.lock().map(|last| last.is_some()).unwrap_or(false);
        f.debug_struct("ConfigMemo").field("kept", &kept).finish()
    }
}

/// Feeds what is written into a hasher.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
