//! HAProxy tooling (work in progress).
