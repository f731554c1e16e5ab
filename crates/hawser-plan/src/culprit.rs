//! Which object or snippet a line of haproxy.cfg came from.
//!
//! The library templates mark each generated section with `# from: <object>`
//! and each snippet with `# snippet: <name>`. When HAProxy refuses a line, the
//! nearest mark at or above it names what is at fault, so an error can say
//! "from Service app/web port 80" instead of only a line number.

/// The nearest `# from:` or `# snippet:` mark at or above a 1-based line.
pub fn culprit_at(config: &str, line: u32) -> Option<String> {
    let lines: Vec<&str> = config.lines().collect();
    let end = usize::try_from(line).ok()?.min(lines.len());
    lines[..end].iter().rev().find_map(|l| {
        let l = l.trim_start();
        l.strip_prefix("# from: ").map(str::to_string).or_else(|| {
            l.strip_prefix("# snippet: ")
                .map(|s| format!("snippet {s}"))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn culprit_is_the_nearest_mark_above() {
        let cfg = "global\n  # snippet: global-a\n  bad\n# from: Service app/web port 80\nbackend x\n  oops\n";
        assert_eq!(culprit_at(cfg, 3).as_deref(), Some("snippet global-a"));
        assert_eq!(
            culprit_at(cfg, 6).as_deref(),
            Some("Service app/web port 80")
        );
        assert_eq!(culprit_at(cfg, 1), None);
    }
}
