//! The points armed in [`crate::ENV`], and the kill itself. Compiled only
//! with the `failpoints` feature.

use std::sync::OnceLock;

use nix::sys::signal::{Signal, raise};

/// The armed names, parsed from [`crate::ENV`] at the first point reached.
fn armed() -> &'static [String] {
    static ARMED: OnceLock<Vec<String>> = OnceLock::new();
    ARMED.get_or_init(|| {
        let names: Vec<String> = std::env::var(crate::ENV)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect();
        for name in &names {
            if !crate::POINTS.contains(&name.as_str()) {
                eprintln!("{}: no point is named {name:?}", crate::ENV);
            }
        }
        names
    })
}

/// Called by [`crate::failpoint!`]: kills the process with SIGKILL when
/// `name` is armed; returns at once otherwise.
pub fn reached(name: &str) {
    if !armed().iter().any(|armed| armed == name) {
        return;
    }
    // stderr is unbuffered: the line is out before the signal.
    eprintln!("failpoint {name} reached: killing the process (SIGKILL)");
    let _ = raise(Signal::SIGKILL);
    // SIGKILL cannot be caught or ignored; should raise fail, do not go on
    // past the point.
    std::process::abort();
}
