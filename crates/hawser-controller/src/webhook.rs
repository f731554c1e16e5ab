//! The admission webhook: an Ingress or a HawserConfig is admitted only if
//! the configuration it would produce renders, names no rejected object, and
//! passes the same checks as the gate — checked on the current objects plus
//! the candidate, never by running anything a user could inject.
//!
//! ```text
//!  AdmissionReview ──► candidate (Ingress | HawserConfig) + current store ──► dry-run render
//!                                                                               │ rejected object? ─► deny, naming it
//!                                                                               │ config policy? ─► deny (never run)
//!                                                                               │ haproxy -c (the gate) ─► deny with HAProxy's words
//!                     ◄── allowed (with the render's warnings) ◄─────────────────┘
//! ```

mod idle;
mod limits;
mod reason;
mod review;
mod server;

pub use limits::{ReviewGuard, WebhookLimits};
pub use reason::MAX_REASON_BYTES;
pub use review::{Candidate, Verdict, review};
pub use server::{WebhookState, router, router_with, serve_tls, serve_tls_with};

#[cfg(test)]
mod tests;
