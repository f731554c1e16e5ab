//! The fake API server through the real kube client: REST and watch.
//!
//! One test binary per crate, one module per file: linking a binary per file
//! cost a build a gigabyte of disk and a minute of links for nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

mod rest;
mod watch;
