//! The plan's wire format: how a [`Plan`] travels from controller to agent.
//!
//! An Apply carries the plan as one content-addressed blob (named by its
//! [`crate::digest`]) and says which encoding the blob is in
//! (`ApplyRequest.plan_format`). The encodings:
//!
//! | format | encoding |
//! |---|---|
//! | 0 | sent by controllers from before the field existed: read as format 1 |
//! | 1 | UTF-8 JSON of [`Plan`], field names as in its Rust definition; enums in lowercase |
//! | 2 | as 1; a map's `match_kind` may also be `ip` (keys are networks, matched by address) or `reg` (keys are regular expressions); servers may carry `keywords`, backends a `cookie` |
//! | 3 | as 2, but a map's entries are not in the plan: they are read from its file, which the version holds anyway (a map file is one `key value` a line, and must read back as it is); a map may name a `twin`, a second file with the same entries, and requests read the copy `maps/live_twins.map` names (an older agent would change only the first copy) |
//!
//! A change the older reader would misread (a renamed or retyped field, a new
//! required meaning) takes a new format number; a new field with a default
//! does not. An agent refuses a format it does not know with
//! [`PlanFormatError::Unknown`], naming both numbers, instead of guessing.

use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::{
    BackendPlan, CertificatePlan, CrtListPlan, FileSet, MapEntry, MapPlan, MatchKind, Plan,
};

/// The format this build writes, and the newest it reads.
pub const PLAN_FORMAT: u32 = 3;

/// Why a plan could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum PlanFormatError {
    #[error(
        "plan format {received} is not one this agent reads (it reads formats up to {PLAN_FORMAT}); \
         run an agent as new as the controller"
    )]
    Unknown { received: u32 },
    #[error("the plan (format {format}) does not parse: {source}")]
    Malformed {
        format: u32,
        #[source]
        source: serde_json::Error,
    },
    #[error("the plan does not serialize: {0}")]
    Unencodable(#[source] serde_json::Error),
    #[error("the plan's map {path}: {reason}")]
    MapFile { path: String, reason: &'static str },
}

impl PlanFormatError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            PlanFormatError::Unknown { .. } => "unknown_plan_format",
            PlanFormatError::Malformed { .. } => "malformed_plan",
            PlanFormatError::Unencodable(_) => "unencodable_plan",
            PlanFormatError::MapFile { .. } => "plan_map_file",
        }
    }
}

/// Whether this build reads plans in `format`.
pub fn reads_format(format: u32) -> bool {
    matches!(format, 0..=PLAN_FORMAT)
}

/// `plan` in [`PLAN_FORMAT`]: its maps without their entries, which travel
/// in the map files (a plan of thousands of routes would carry each twice).
pub fn encode(plan: &Plan) -> Result<Vec<u8>, PlanFormatError> {
    encode_after(plan, None).map(|encoded| encoded.bytes)
}

/// A plan as [`encode_after`] wrote it, with where each of its backends is
/// in the bytes.
#[derive(Debug, Clone, Default)]
pub struct Encoded {
    pub bytes: Vec<u8>,
    pub backends_at: Vec<Range<usize>>,
}

/// As [`encode`], the same bytes, for a plan that follows `earlier` (a
/// plan and its encoding): a backend `earlier` holds too, shared (the same
/// `Arc`, as a render keeps the backends that did not change), is copied
/// from `earlier`'s bytes instead of written again. With thousands of
/// Services, writing every backend was most of what readying a version
/// for the agents cost.
pub fn encode_after(
    plan: &Plan,
    earlier: Option<(&Plan, &Encoded)>,
) -> Result<Encoded, PlanFormatError> {
    let unencodable = PlanFormatError::Unencodable;
    let (before, before_at, before_bytes) = match earlier {
        Some((plan, encoded)) => (
            &plan.backends[..],
            &encoded.backends_at[..],
            &encoded.bytes[..],
        ),
        None => (&[][..], &[][..], &[][..]),
    };
    let mut bytes = Vec::with_capacity(before_bytes.len());
    bytes.extend_from_slice(b"{\"structure_digest\":");
    serde_json::to_writer(&mut bytes, &plan.structure_digest).map_err(unencodable)?;
    bytes.extend_from_slice(b",\"backends\":[");
    let mut backends_at = Vec::with_capacity(plan.backends.len());
    // The earlier backend in the place this one would have.
    let mut next = 0;
    for (index, backend) in plan.backends.iter().enumerate() {
        if index > 0 {
            bytes.push(b',');
        }
        let at = bytes.len();
        let same = (next..next + LOOK_AHEAD)
            .find(|&i| before.get(i).is_some_and(|b| Arc::ptr_eq(b, backend)))
            .and_then(|i| Some((i, before_bytes.get(before_at.get(i)?.clone())?)));
        match same {
            Some((i, written)) => {
                bytes.extend_from_slice(written);
                next = i + 1;
            }
            None => {
                serde_json::to_writer(&mut bytes, backend).map_err(unencodable)?;
                while before.get(next).is_some_and(|b| b.name <= backend.name) {
                    next += 1;
                }
            }
        }
        backends_at.push(at..bytes.len());
    }
    let maps: Vec<WireMap<'_>> = plan
        .maps
        .iter()
        .map(|m| WireMap {
            path: &m.path,
            match_kind: m.match_kind,
            twin: m.twin.as_deref(),
        })
        .collect();
    bytes.extend_from_slice(b"],\"maps\":");
    serde_json::to_writer(&mut bytes, &maps).map_err(unencodable)?;
    bytes.extend_from_slice(b",\"certificates\":");
    serde_json::to_writer(&mut bytes, &plan.certificates).map_err(unencodable)?;
    bytes.extend_from_slice(b",\"crt_lists\":");
    serde_json::to_writer(&mut bytes, &plan.crt_lists).map_err(unencodable)?;
    bytes.push(b'}');
    Ok(Encoded { bytes, backends_at })
}

/// A map as [`encode_after`] writes it: without its entries.
#[derive(Serialize)]
struct WireMap<'a> {
    path: &'a str,
    match_kind: MatchKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    twin: Option<&'a str>,
}

/// The plan in `bytes`, encoded in `format`, with the version's `files`
/// (from format 3, its maps' entries are read from their files).
pub fn decode(format: u32, bytes: &[u8], files: &FileSet) -> Result<Plan, PlanFormatError> {
    let mut plan = parse(format, bytes)?;
    if format >= 3 {
        for map in &mut plan.maps {
            read_entries(map, files, &[])?;
        }
    }
    Ok(plan)
}

/// A plan as [`decode_after`] read it, with where each of its backends is
/// in the bytes it was read from, so that the next read can take the
/// backends whose bytes are the same as they are.
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    pub plan: Arc<Plan>,
    /// `plan.backends[i]` was read from `bytes[backends_at[i]]` (empty when
    /// the plan was not read backend by backend).
    pub backends_at: Vec<Range<usize>>,
}

/// What [`decode_after`] may take from the version before instead of
/// reading it again.
#[derive(Debug, Clone, Copy)]
pub struct Earlier<'a> {
    /// That version's plan, its maps' entries included.
    pub decoded: &'a Decoded,
    /// The bytes it was read from.
    pub bytes: &'a [u8],
}

/// As [`decode`], for a version that follows `earlier` (if any):
/// `unchanged(path)` says whether the file at `path` is, byte for byte, the
/// one `earlier` was read with. From format 3:
///
/// - a plan whose bytes are `earlier`'s is not parsed again;
/// - a backend whose bytes are those of the backend in the same place of
///   `earlier` (its names sorted, as a render writes them) is taken as it
///   is; only the others are parsed;
/// - a map whose file and twin are unchanged keeps `earlier`'s entries,
///   which is what those files read back as.
///
/// With thousands of routes or Services, parsing is most of what an Apply
/// costs the agent, and a change leaves most of the plan as it was.
pub fn decode_after(
    format: u32,
    bytes: &[u8],
    files: &FileSet,
    earlier: Option<Earlier<'_>>,
    unchanged: impl Fn(&str) -> bool,
) -> Result<Decoded, PlanFormatError> {
    if format < 3 {
        return Ok(Decoded {
            plan: Arc::new(decode(format, bytes, files)?),
            backends_at: Vec::new(),
        });
    }
    let (mut plan, backends_at) = match earlier {
        Some(earlier) if earlier.bytes == bytes => (
            without_entries(&earlier.decoded.plan),
            earlier.decoded.backends_at.clone(),
        ),
        _ => parse_by_backend(format, bytes, earlier)?,
    };
    for map in &mut plan.maps {
        let before = earlier.and_then(|e| e.decoded.plan.maps.iter().find(|m| m.path == map.path));
        let kept = before.filter(|before| {
            before.twin == map.twin
                && unchanged(&map.path)
                && map.twin.as_deref().is_none_or(&unchanged)
        });
        match kept {
            Some(kept) => map.entries = kept.entries.clone(),
            None => read_entries(map, files, before.map_or(&[], |b| &b.entries))?,
        }
    }
    Ok(Decoded {
        plan: Arc::new(plan),
        backends_at,
    })
}

/// How many earlier backends on a backend's bytes are looked for: removed
/// backends in a row, past which the rest is read until the names align.
const LOOK_AHEAD: usize = 4;

/// [`Plan`] with each backend left as the bytes it is written in.
#[derive(Deserialize)]
struct PlanByBackend<'a> {
    structure_digest: String,
    #[serde(borrow)]
    backends: Vec<&'a RawValue>,
    maps: Vec<MapPlan>,
    certificates: Vec<CertificatePlan>,
    crt_lists: Vec<CrtListPlan>,
}

/// The plan in `bytes` (format 3 or later), each backend parsed unless its
/// bytes are those of `earlier`'s backend in the same place, which is taken
/// instead; with where each backend is in `bytes`.
fn parse_by_backend(
    format: u32,
    bytes: &[u8],
    earlier: Option<Earlier<'_>>,
) -> Result<(Plan, Vec<Range<usize>>), PlanFormatError> {
    if !reads_format(format) {
        return Err(PlanFormatError::Unknown { received: format });
    }
    let malformed = |source| PlanFormatError::Malformed { format, source };
    let read: PlanByBackend<'_> = serde_json::from_slice(bytes).map_err(malformed)?;
    let (before, before_at, before_bytes) = match earlier {
        Some(e) => (
            &e.decoded.plan.backends[..],
            &e.decoded.backends_at[..],
            e.bytes,
        ),
        None => (&[][..], &[][..], &[][..]),
    };
    let start = bytes.as_ptr() as usize;
    let mut backends = Vec::with_capacity(read.backends.len());
    let mut backends_at = Vec::with_capacity(read.backends.len());
    let same_as = |index: usize, text: &str| {
        before_at
            .get(index)
            .and_then(|range| before_bytes.get(range.clone()))
            .is_some_and(|earlier| earlier == text.as_bytes())
    };
    // The earlier backend in the place this one would have.
    let mut next = 0;
    for raw in read.backends {
        let text = raw.get();
        let at = (text.as_ptr() as usize).saturating_sub(start);
        backends_at.push(at..at + text.len());
        // The same as that one, or as one a few places on (those between
        // are gone).
        let same = (next..next + LOOK_AHEAD).find(|&index| same_as(index, text));
        if let Some(index) = same
            && let Some(backend) = before.get(index)
        {
            backends.push(Arc::clone(backend));
            next = index + 1;
            continue;
        }
        let backend: BackendPlan = serde_json::from_str(text).map_err(malformed)?;
        // Earlier backends named before it are gone, one of its name changed.
        while before.get(next).is_some_and(|b| b.name <= backend.name) {
            next += 1;
        }
        backends.push(Arc::new(backend));
    }
    let plan = Plan {
        structure_digest: read.structure_digest,
        backends,
        maps: read.maps,
        certificates: read.certificates,
        crt_lists: read.crt_lists,
    };
    refuse_entries(&plan)?;
    Ok((plan, backends_at))
}

/// The plan as `bytes` say, without the maps' entries of format 3, which
/// must not be there.
fn parse(format: u32, bytes: &[u8]) -> Result<Plan, PlanFormatError> {
    if !reads_format(format) {
        return Err(PlanFormatError::Unknown { received: format });
    }
    let plan: Plan = serde_json::from_slice(bytes)
        .map_err(|source| PlanFormatError::Malformed { format, source })?;
    if format >= 3 {
        refuse_entries(&plan)?;
    }
    Ok(plan)
}

/// From format 3 a map's entries are in its file: a plan that carries some
/// is refused.
fn refuse_entries(plan: &Plan) -> Result<(), PlanFormatError> {
    match plan.maps.iter().find(|m| !m.entries.is_empty()) {
        Some(map) => Err(PlanFormatError::MapFile {
            path: map.path.clone(),
            reason: "its entries come from its file, not the plan",
        }),
        None => Ok(()),
    }
}

/// `plan` as format 3 carries it: its maps without their entries.
fn without_entries(plan: &Plan) -> Plan {
    Plan {
        structure_digest: plan.structure_digest.clone(),
        backends: plan.backends.clone(),
        maps: plan
            .maps
            .iter()
            .map(|m| MapPlan {
                path: m.path.clone(),
                match_kind: m.match_kind,
                entries: Vec::new(),
                twin: m.twin.clone(),
            })
            .collect(),
        certificates: plan.certificates.clone(),
        crt_lists: plan.crt_lists.clone(),
    }
}

/// Reads `map`'s entries from its file (one `key value` a line, split at
/// the first space, every line ended) and checks that a twin holds the
/// same text. A line that reads as an entry of `earlier` (the same map in
/// the version before), found in its place or a few places on, is that
/// entry, shared rather than copied: one route changed leaves thousands of
/// lines as they were.
fn read_entries(
    map: &mut MapPlan,
    files: &FileSet,
    earlier: &[MapEntry],
) -> Result<(), PlanFormatError> {
    let refused = |path: &str, reason| PlanFormatError::MapFile {
        path: path.to_string(),
        reason,
    };
    let text = files
        .text(&map.path)
        .ok_or_else(|| refused(&map.path, "the version holds no such text file"))?;
    let not_entries = || {
        refused(
            &map.path,
            "the file does not read back as map entries (one `key value` a line)",
        )
    };
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(not_entries());
    }
    let mut before = EarlierEntries { earlier, next: 0 };
    let mut entries = Vec::with_capacity(text.len() / 48);
    for line in text.split_terminator('\n') {
        let (key, value) = line.split_once(' ').ok_or_else(not_entries)?;
        entries.push(
            before
                .take(key, value)
                .unwrap_or_else(|| MapEntry::new(key, value)),
        );
    }
    map.entries = entries;
    if let Some(twin) = &map.twin
        && files.text(twin) != Some(text)
    {
        return Err(refused(twin, "a twin must hold the entries of its map"));
    }
    Ok(())
}

/// The entries of a map in the version before, walked in file order
/// beside the new file's lines.
struct EarlierEntries<'a> {
    earlier: &'a [MapEntry],
    /// The entry the next line would be, if nothing came or went there.
    next: usize,
}

impl EarlierEntries<'_> {
    /// The entry `key value` of the version before, when it is the next
    /// one or one a few places on (those between are gone).
    fn take(&mut self, key: &str, value: &str) -> Option<MapEntry> {
        let end = self.earlier.len().min(self.next + LOOK_AHEAD + 1);
        let at = (self.next..end).find(|&at| {
            let entry = &self.earlier[at];
            *entry.key == *key && *entry.value == *value
        })?;
        self.next = at + 1;
        Some(self.earlier[at].clone())
    }
}

#[cfg(test)]
mod tests;
