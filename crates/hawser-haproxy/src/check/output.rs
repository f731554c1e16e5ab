//! Reading HAProxy's diagnostics out of what `haproxy -c` printed.
//!
//! Each message starts with a tagged line and may go on with `|` lines:
//!
//! ```text
//! [ALERT]    (6556) : config : parsing [haproxy.cfg:12] : unknown keyword 'bogus' in 'frontend' section
//! [WARNING]  (6564) : config : missing timeouts for frontend 'fe'.
//!    | While not properly invalid, you will certainly encounter various problems
//! ```
//!
//! The pid is dropped so the same mistake always reads the same way (events
//! and status conditions would otherwise change on every check).

use std::process::ExitStatus;

/// Messages of `haproxy -c`, sorted by severity; notices are dropped.
#[derive(Debug, Default)]
pub(super) struct Messages {
    pub(super) alerts: Vec<String>,
    pub(super) warnings: Vec<String>,
    /// Lines that belong to no tagged message, e.g. `Warnings were found.`
    untagged: Vec<String>,
}

/// Which list the message being read goes to.
#[derive(Clone, Copy)]
enum Target {
    Alerts,
    Warnings,
    Dropped,
}

impl Messages {
    pub(super) fn parse(text: &str) -> Self {
        let mut messages = Self::default();
        let mut current: Option<Target> = None;
        for line in text.lines().map(str::trim_end) {
            if line.trim_start().starts_with('|') {
                match current {
                    Some(target) => messages.append(target, line),
                    None => messages.untagged.push(line.to_owned()),
                }
                continue;
            }
            let target = if line.starts_with("[ALERT]") {
                Target::Alerts
            } else if line.starts_with("[WARNING]") {
                Target::Warnings
            } else if line.starts_with('[') {
                Target::Dropped
            } else {
                current = None;
                if !line.is_empty() {
                    messages.untagged.push(line.to_owned());
                }
                continue;
            };
            current = Some(target);
            messages.push(target, without_pid(line));
        }
        messages
    }

    /// What to report when HAProxy failed without a single alert.
    pub(super) fn fallback(&self, status: &ExitStatus) -> String {
        if self.untagged.is_empty() {
            format!("haproxy -c exited with {status} and printed no alert")
        } else {
            self.untagged.join("\n")
        }
    }

    fn push(&mut self, target: Target, message: String) {
        match target {
            Target::Alerts => self.alerts.push(message),
            Target::Warnings => self.warnings.push(message),
            Target::Dropped => {}
        }
    }

    fn append(&mut self, target: Target, line: &str) {
        let list = match target {
            Target::Alerts => &mut self.alerts,
            Target::Warnings => &mut self.warnings,
            Target::Dropped => return,
        };
        if let Some(last) = list.last_mut() {
            last.push('\n');
            last.push_str(line);
        }
    }
}

/// `[ALERT]    (6556) : config : ...` → `[ALERT] config : ...`
fn without_pid(line: &str) -> String {
    let Some((tag, rest)) = line.split_once(']') else {
        return line.to_owned();
    };
    let rest = rest.trim_start();
    let rest = rest
        .strip_prefix('(')
        .and_then(|after| after.split_once(") : "))
        .filter(|(pid, _)| pid.chars().all(|c| c.is_ascii_digit()))
        .map_or(rest, |(_, message)| message);
    format!("{tag}] {rest}")
}

/// The first `[file:line]` an alert names, e.g. in `parsing [haproxy.cfg:42] :`.
pub(super) fn location(alert: &str) -> Option<(String, u32)> {
    alert.match_indices('[').find_map(|(start, _)| {
        let inside = &alert[start + 1..];
        let inside = &inside[..inside.find(']')?];
        let (file, line) = inside.rsplit_once(':')?;
        let line = line.parse().ok()?;
        (!file.is_empty()).then(|| (file.to_owned(), line))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAILED: &str = "\
[NOTICE]   (6508) : haproxy version is 3.0.11-9e587df
[ALERT]    (6508) : config : parsing [bad.cfg:12] : unknown keyword 'bogus_directive' in 'frontend' section
[ALERT]    (6508) : config : Error(s) found in configuration file : bad.cfg
";

    const WARNED: &str = "\
[NOTICE]   (6564) : haproxy version is 3.0.11-9e587df
[WARNING]  (6564) : config : missing timeouts for frontend 'fe'.
   | While not properly invalid, you will certainly encounter various problems
[WARNING]  (6564) : config : missing timeouts for backend 'be'.
Warnings were found.
";

    #[test]
    fn alerts_lose_their_pid_and_notices_are_dropped() {
        let messages = Messages::parse(FAILED);
        assert_eq!(
            messages.alerts,
            [
                "[ALERT] config : parsing [bad.cfg:12] : unknown keyword 'bogus_directive' in 'frontend' section",
                "[ALERT] config : Error(s) found in configuration file : bad.cfg",
            ]
        );
        assert!(messages.warnings.is_empty());
    }

    #[test]
    fn warnings_keep_their_continuation_lines() {
        let messages = Messages::parse(WARNED);
        assert_eq!(
            messages.warnings,
            [
                "[WARNING] config : missing timeouts for frontend 'fe'.\n   | While not properly invalid, you will certainly encounter various problems",
                "[WARNING] config : missing timeouts for backend 'be'.",
            ]
        );
        assert_eq!(messages.untagged, ["Warnings were found."]);
    }

    #[test]
    fn location_reads_the_first_file_and_line() {
        let at = |s: &str| location(s).map(|(file, line)| format!("{file}:{line}"));
        assert_eq!(
            at("[ALERT] config : parsing [haproxy.cfg:42] : x").as_deref(),
            Some("haproxy.cfg:42")
        );
        assert_eq!(
            at("[ALERT] config : [multi.cfg:10] : 'server be/s1' : x").as_deref(),
            Some("multi.cfg:10")
        );
        assert_eq!(at("[ALERT] config : proxy 'fe' [x] : no [a:b] line"), None);
        assert_eq!(
            at("[ALERT] config : Fatal errors found in configuration."),
            None
        );
    }
}
