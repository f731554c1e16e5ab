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

use serde::Serialize;

use std::sync::Arc;

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
    let wire = WirePlan {
        structure_digest: &plan.structure_digest,
        backends: &plan.backends,
        maps: plan
            .maps
            .iter()
            .map(|m| WireMap {
                path: &m.path,
                match_kind: m.match_kind,
                twin: m.twin.as_deref(),
            })
            .collect(),
        certificates: &plan.certificates,
        crt_lists: &plan.crt_lists,
    };
    serde_json::to_vec(&wire).map_err(PlanFormatError::Unencodable)
}

/// A [`Plan`] as [`encode`] writes it: field for field, maps without entries.
#[derive(Serialize)]
struct WirePlan<'a> {
    structure_digest: &'a str,
    backends: &'a [Arc<BackendPlan>],
    maps: Vec<WireMap<'a>>,
    certificates: &'a [CertificatePlan],
    crt_lists: &'a [CrtListPlan],
}

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
            read_entries(map, files)?;
        }
    }
    Ok(plan)
}

/// What [`decode_after`] may take from the version before instead of
/// reading it again.
#[derive(Debug, Clone, Copy)]
pub struct Earlier<'a> {
    /// That version's plan, its maps' entries included.
    pub plan: &'a Plan,
    /// The bytes decoded now are those `plan` was decoded from.
    pub same_bytes: bool,
}

/// As [`decode`], for a version that follows `earlier`: `unchanged(path)`
/// says whether the file at `path` is, byte for byte, the one `earlier` was
/// read with. From format 3 a plan whose bytes are `earlier`'s is not parsed
/// again, and a map whose file and twin are unchanged keeps `earlier`'s
/// entries, which is what those files read back as. With thousands of
/// routes or Services, parsing is most of what an Apply costs the agent,
/// and most changes leave the plan or the route maps as they were.
pub fn decode_after(
    format: u32,
    bytes: &[u8],
    files: &FileSet,
    earlier: Earlier<'_>,
    unchanged: impl Fn(&str) -> bool,
) -> Result<Plan, PlanFormatError> {
    if format < 3 {
        return decode(format, bytes, files);
    }
    let mut plan = if earlier.same_bytes {
        without_entries(earlier.plan)
    } else {
        parse(format, bytes)?
    };
    for map in &mut plan.maps {
        let kept = earlier
            .plan
            .maps
            .iter()
            .find(|m| m.path == map.path && m.twin == map.twin)
            .filter(|_| unchanged(&map.path) && map.twin.as_deref().is_none_or(&unchanged));
        match kept {
            Some(kept) => map.entries = kept.entries.clone(),
            None => read_entries(map, files)?,
        }
    }
    Ok(plan)
}

/// The plan as `bytes` say, without the maps' entries of format 3, which
/// must not be there.
fn parse(format: u32, bytes: &[u8]) -> Result<Plan, PlanFormatError> {
    if !reads_format(format) {
        return Err(PlanFormatError::Unknown { received: format });
    }
    let plan: Plan = serde_json::from_slice(bytes)
        .map_err(|source| PlanFormatError::Malformed { format, source })?;
    if format >= 3
        && let Some(map) = plan.maps.iter().find(|m| !m.entries.is_empty())
    {
        return Err(PlanFormatError::MapFile {
            path: map.path.clone(),
            reason: "its entries come from its file, not the plan",
        });
    }
    Ok(plan)
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

/// Fills `map`'s entries from its file, which must read back exactly as
/// those entries (one `key value` a line), and checks a twin holds the same.
fn read_entries(map: &mut MapPlan, files: &FileSet) -> Result<(), PlanFormatError> {
    let refused = |path: &str, reason| PlanFormatError::MapFile {
        path: path.to_string(),
        reason,
    };
    let text = files
        .text(&map.path)
        .ok_or_else(|| refused(&map.path, "the version holds no such text file"))?;
    map.entries = text
        .split_terminator('\n')
        .map(|line| {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            MapEntry::new(key, value)
        })
        .collect();
    if map.to_file() != text {
        return Err(refused(
            &map.path,
            "the file does not read back as map entries (one `key value` a line)",
        ));
    }
    if let Some(twin) = &map.twin
        && files.text(twin) != Some(text)
    {
        return Err(refused(twin, "a twin must hold the entries of its map"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
