//! Named crash points: `failpoint!("tree.mid_write")` marks a step of the
//! apply pipeline where a crash test kills hawser, exactly there.
//!
//! ```text
//!  HAWSER_FAILPOINTS=tree.mid_write ──► hawser run ──► failpoint!("tree.mid_write")
//!                                                         │ armed: one line on stderr,
//!                                                         ▼ then SIGKILL to itself
//!                                                       dead, as `kill -9` leaves it
//! ```
//!
//! Why not random delays: a kill after a random wait lands where it
//! happens to land, and the narrow windows (between `set ssl cert` and
//! `commit`, between a reload and `lkg`) are hit rarely or never. A named
//! point is hit every time, so each window has its own test.
//!
//! Why SIGKILL and not a panic or an error: a crash runs no destructor, no
//! unwinding, no shutdown path. The process sends itself the signal `kill -9`
//! sends, so what it leaves is what a crash leaves.
//!
//! Why it cannot reach production: without the `failpoints` feature the
//! macro expands to nothing: no check, no name, no code in the binary. Only
//! the `hawser` crate's dev-dependencies turn the feature on, and cargo
//! applies them only to builds of tests; `cargo build --release` has none.
//! With the feature, an unarmed point costs one read of a parsed list.
//!
//! The points, and what each test proves, are listed in `docs/agent.md`
//! ("Crash points") and in [`POINTS`].

/// The environment variable that arms points: their names, separated by
/// commas. Read once, at the first point reached.
pub const ENV: &str = "HAWSER_FAILPOINTS";

/// Every point in the code, in pipeline order. Arming another name is
/// reported on stderr (a typo would otherwise make a test wait for a kill
/// that never comes).
pub const POINTS: &[&str] = &[
    "tree.mid_write",
    "tree.synced_before_manifest",
    "agent.published_before_reload",
    "agent.reloaded_before_lkg",
    "runtime.ssl_set_before_commit",
    "runtime.map_prepared_before_commit",
];

/// Marks a crash point: when its name is armed in [`ENV`], the process
/// kills itself here with SIGKILL. Expands to nothing without the
/// `failpoints` feature.
#[cfg(feature = "failpoints")]
#[macro_export]
macro_rules! failpoint {
    ($name:literal) => {
        $crate::reached($name)
    };
}

/// Marks a crash point (compiled out: the `failpoints` feature is off).
#[cfg(not(feature = "failpoints"))]
#[macro_export]
macro_rules! failpoint {
    ($name:literal) => {};
}

#[cfg(feature = "failpoints")]
mod armed;

#[cfg(feature = "failpoints")]
pub use armed::reached;
