//! Rendering (work in progress).
