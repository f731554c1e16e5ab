//! The HAProxy boundary against the real binary: checks, the master CLI, the
//! runtime API, the sandbox and the config policy.
//!
//! One test binary per crate, one module per file: linking a binary per file
//! cost a build a gigabyte of disk and a minute of links for nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

#[path = "../hostile_configs/mod.rs"]
mod hostile_configs;
#[path = "../support/mod.rs"]
mod support;

mod check;
mod fake_binary;
mod locate;
mod master_cli;
mod policy_corpus;
mod runtime_maps;
mod runtime_servers;
mod runtime_ssl;
mod sandbox;
mod socket_errors;
mod staged_tree;
