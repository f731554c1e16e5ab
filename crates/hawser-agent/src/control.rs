//! The agent's side of the controller↔agent contract (`hawser-proto`).
//!
//! ```text
//!  Apply ─► peer check ─► one at a time ─► epoch fence ─► baseline fence ─► resolve files
//!     (every call)                        (stale: refused,  (mismatch: refused,   by digest: request blobs,
//!                                          nothing written)  nothing written)     held version, served tree
//!                                                                                 (missing: NEED_FILES)
//!        ─► persist epoch ─► submit to the agent ─► wait for its outcome ─► runtime | reload | no-op | rejected
//!                                                    or its change live ─► runtime (the full check of its
//!                                                    (still waiting:         tree follows; the state reports it)
//!                                                     scheduled)
//!  WatchState ◄── State, recomputed on every status, epoch or held-version change
//! ```
//!
//! Nothing here knows about certificates: the caller passes a [`PeerCheck`]
//! that re-verifies the client's chain against the trust of the moment, so a
//! connection opened before a trust change is judged by the new trust.

mod epoch;
mod held;
mod service;
mod state;

pub use epoch::EpochFile;
pub use held::{ContentError, Held};
pub use service::{ControlConfig, ControlService, PeerCheck};
