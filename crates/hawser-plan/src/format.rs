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
//! | 3 | as 2; a map may name a `twin`, a second copy with the same entries, and requests read the copy `maps/live_twins.map` names (an older agent would change only the first copy) |
//!
//! A change the older reader would misread (a renamed or retyped field, a new
//! required meaning) takes a new format number; a new field with a default
//! does not. An agent refuses a format it does not know with
//! [`PlanFormatError::Unknown`], naming both numbers, instead of guessing.

use crate::Plan;

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
}

impl PlanFormatError {
    /// A stable category for metrics and events.
    pub fn metric_label(&self) -> &'static str {
        match self {
            PlanFormatError::Unknown { .. } => "unknown_plan_format",
            PlanFormatError::Malformed { .. } => "malformed_plan",
            PlanFormatError::Unencodable(_) => "unencodable_plan",
        }
    }
}

/// Whether this build reads plans in `format`.
pub fn reads_format(format: u32) -> bool {
    matches!(format, 0..=PLAN_FORMAT)
}

/// `plan` in [`PLAN_FORMAT`].
pub fn encode(plan: &Plan) -> Result<Vec<u8>, PlanFormatError> {
    serde_json::to_vec(plan).map_err(PlanFormatError::Unencodable)
}

/// The plan in `bytes`, encoded in `format`.
pub fn decode(format: u32, bytes: &[u8]) -> Result<Plan, PlanFormatError> {
    if !reads_format(format) {
        return Err(PlanFormatError::Unknown { received: format });
    }
    serde_json::from_slice(bytes).map_err(|source| PlanFormatError::Malformed { format, source })
}

#[cfg(test)]
mod tests;
