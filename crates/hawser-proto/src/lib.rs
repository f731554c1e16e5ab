//! The controller↔agent contract and its transport.
//!
//! ```text
//!  controller ──Apply(epoch, expected, generation, files by digest, plan_format, blobs, edits)──► agent
//!             ◄─ApplyResponse(outcome, HAProxy's words | missing digests)──
//!             ◄─WatchState: State on every change (generation, digests, last result)─
//! ```
//!
//! The messages live in `proto/agent.proto` (compiled by protox, so no
//! `protoc` binary is needed). [`transport`] carries them over TLS 1.3 only,
//! both sides authenticated: there is no plaintext path at all.
//! [`blob_edit`] makes and applies the edits a changed file travels as.
//! `docs/agent-protocol.md` describes the exchange. The plan is a blob whose
//! encoding `hawser-plan` owns and numbers (`plan_format`); this crate
//! carries it without knowing it.
//!
//! It must not depend on any other hawser crate: both roles link it, and it
//! carries what they exchange without knowing it.

pub mod blob_edit;
pub mod transport;

/// The generated messages, client and server of `hawser.agent.v1`.
#[allow(
    clippy::all,
    clippy::pedantic,
    missing_debug_implementations,
    reason = "generated code"
)]
pub mod v1 {
    tonic::include_proto!("hawser.agent.v1");
}

/// The largest gRPC message either side accepts (a whole first push of a big
/// fleet's configuration, certificates included).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// The largest single file an Apply may carry.
pub const MAX_FILE_BYTES: usize = 64 * 1024 * 1024;

/// The most files one generation may hold.
pub const MAX_FILES: usize = 100_000;

/// Whether `text` is a content digest: lowercase hex SHA-256.
pub fn is_digest(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl v1::Outcome {
    /// The name used in logs, status and metrics.
    pub fn label(self) -> &'static str {
        match self {
            v1::Outcome::Unspecified => "unspecified",
            v1::Outcome::Runtime => "runtime",
            v1::Outcome::Reload => "reload",
            v1::Outcome::Scheduled => "scheduled",
            v1::Outcome::NoOp => "no-op",
            v1::Outcome::Rejected => "rejected",
            v1::Outcome::NeedFiles => "need-files",
            v1::Outcome::StaleEpoch => "stale-epoch",
            v1::Outcome::BaselineMismatch => "baseline-mismatch",
        }
    }
}
