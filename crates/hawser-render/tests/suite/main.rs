//! Whole renders: snapshots, determinism, structure digests and the inputs
//! templates read.
//!
//! One test binary per crate, one module per file: linking a binary per file
//! cost a build a gigabyte of disk and a minute of links for nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

#[path = "../support/mod.rs"]
mod support;

mod determinism;
mod extra_resources;
mod incremental;
mod mirror;
mod settings_paths;
mod snapshots;
mod spares;
mod structure;
mod unserved_listeners;
