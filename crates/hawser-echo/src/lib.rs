//! Echo backend (work in progress).
