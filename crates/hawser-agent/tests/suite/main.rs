//! The agent against the real HAProxy: supervision, attach mode, the policy.
//!
//! One test binary per crate, one module per file: linking a binary per file
//! cost a build a gigabyte of disk and a minute of links for nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

#[path = "../../../hawser-haproxy/tests/hostile_configs/mod.rs"]
mod hostile_configs;

mod attach;
mod check_left_to_newer;
mod common;
mod policy_corpus;
mod process;
mod runtime_first;
