//! The hostile corpus: configurations the config policy must refuse, with
//! the metric label of the reason each is refused for. Kept as one data file
//! (`corpus.txt`) so any test, in any crate, can run every case through its
//! own mode (`#[path = ".../hostile_configs/mod.rs"] mod hostile_configs;`).

#![allow(dead_code, reason = "each test uses the part it needs")]

/// One hostile configuration.
#[derive(Debug, Clone)]
pub struct HostileCase {
    pub name: String,
    /// The `metric_label()` of the reason it must be refused for.
    pub reason: String,
    /// The whole `haproxy.cfg`.
    pub config: Vec<u8>,
}

/// Every case of `corpus.txt`, placeholders replaced.
pub fn corpus() -> Vec<HostileCase> {
    let text = include_str!("corpus.txt");
    let mut cases: Vec<HostileCase> = Vec::new();
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("=== ") {
            let (name, reason) = header.split_once(": ").expect("=== <name>: <reason>");
            cases.push(HostileCase {
                name: name.to_string(),
                reason: reason.to_string(),
                config: Vec::new(),
            });
        } else if let Some(case) = cases.last_mut() {
            let line = line
                .replace("<CR>", "\r")
                .replace("<NUL>", "\0")
                .replace("<TAB>", "\t");
            case.config.extend_from_slice(line.as_bytes());
            case.config.push(b'\n');
        }
    }
    cases
}
