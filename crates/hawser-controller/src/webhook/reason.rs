//! What a deny reason or warning may tell the caller: the webhook
//! authenticates no one, so a reason is bounded in length and never carries
//! the content of a file HAProxy read.
//!
//! HAProxy's own output is cut down to its `[ALERT]` lines that name a
//! configuration location, each as `<file>:<line>: <message>`, where the
//! message stops before the first `: ` (where HAProxy appends text from
//! elsewhere: Lua's error, OpenSSL's, a file's) and a quoted word survives
//! only if the rendered configuration itself holds it (a keyword, a section,
//! a proxy name), so no byte of another file is echoed.

use hawser_render::CONFIG_PATH;

/// The most a reason or a warning may hold, in bytes.
pub const MAX_REASON_BYTES: usize = 1024;
/// The most HAProxy alert lines a reason repeats.
const MAX_ALERTS: usize = 5;
/// The longest quoted word kept from HAProxy's output.
const MAX_QUOTED: usize = 64;
const ELLIPSIS: char = '…';

/// `text` cut to [`MAX_REASON_BYTES`] on a char boundary, ending in `…` when cut.
pub fn bounded(text: &str) -> String {
    if text.len() <= MAX_REASON_BYTES {
        return text.to_string();
    }
    let room = MAX_REASON_BYTES - ELLIPSIS.len_utf8();
    let end = (0..=room)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let mut out = text[..end].to_string();
    out.push(ELLIPSIS);
    out
}

/// The deny reason for a configuration `haproxy -c` refused: where (and the
/// snippet or override at fault), then HAProxy's alerts reduced as above.
/// `config` is the rendered `haproxy.cfg` that was checked.
pub fn haproxy_rejection(
    line: Option<u32>,
    culprit: Option<&str>,
    output: &str,
    config: &str,
) -> String {
    let mut reason = "HAProxy rejects the rendered configuration".to_string();
    if let Some(line) = line {
        reason.push_str(&format!(" at {CONFIG_PATH} line {line}"));
    }
    if let Some(culprit) = culprit {
        reason.push_str(&format!(" (from {culprit})"));
    }
    let alerts: Vec<String> = output
        .lines()
        .filter_map(|l| alert(l, config))
        .take(MAX_ALERTS)
        .collect();
    if !alerts.is_empty() {
        reason.push_str(":\n");
        reason.push_str(&alerts.join("\n"));
    }
    bounded(&reason)
}

/// `[ALERT] (pid) : config : parsing [<dir>/haproxy.cfg:12] : <message>`
/// as `haproxy.cfg:12: <message reduced>`; `None` for any other line.
fn alert(line: &str, config: &str) -> Option<String> {
    if !line.starts_with("[ALERT]") {
        return None;
    }
    let (_, after) = line.split_once("parsing [")?;
    let (location, message) = after.split_once(']')?;
    let (path, number) = location.rsplit_once(':')?;
    let number: u32 = number.parse().ok()?;
    let message = message.trim_start_matches([' ', ':']);
    Some(format!(
        "{}:{number}: {}",
        tree_relative(path),
        reduced(message, config).trim_end()
    ))
}

/// A path inside the checked tree, relative to it (the tree's own location
/// is the controller's business); anything else by its file name only.
fn tree_relative(path: &str) -> &str {
    if let Some((_, inside)) = path.split_once("/hawser-check-")
        && let Some((_, relative)) = inside.split_once('/')
    {
        return relative;
    }
    path.rsplit('/').next().unwrap_or(path)
}

/// The message up to the first `: ` outside quotes, each quoted word kept
/// only if `config` holds it.
fn reduced(message: &str, config: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    loop {
        let quote = rest.find(['\'', '"']);
        let stop = rest.find(": ");
        match (quote, stop) {
            (_, Some(stop)) if quote.is_none_or(|q| stop < q) => {
                out.push_str(&rest[..stop]);
                return out;
            }
            (Some(q), _) => {
                out.push_str(&rest[..q]);
                let mark = &rest[q..=q];
                let after = &rest[q + 1..];
                let Some(end) = after.find(mark) else {
                    // An unclosed quote: everything after it may be foreign.
                    return out;
                };
                let quoted = &after[..end];
                let known =
                    !quoted.is_empty() && quoted.len() <= MAX_QUOTED && config.contains(quoted);
                out.push_str(mark);
                if known {
                    out.push_str(quoted);
                } else {
                    out.push(ELLIPSIS);
                }
                out.push_str(mark);
                rest = &after[end + 1..];
            }
            (None, _) => {
                out.push_str(rest);
                return out;
            }
        }
    }
}
