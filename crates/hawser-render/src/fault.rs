//! Which object is at fault when HAProxy refuses a render, so the
//! controller can render again without it (quarantine) instead of leaving
//! every other change waiting behind one bad object.
//!
//! ```text
//!  haproxy -c alerts ──► a certificate file of the plan it names ──► its Secret
//!                    └─► haproxy.cfg line N ──► the rule it belongs to (`-m str rN`, or
//!                                               the `# rN: <route>` comment right above)
//!                                           └─► the nearest `# from:` / `# snippet:` mark
//! ```
//!
//! Only an object is ever blamed. A line of a snippet, an override or of
//! hawser's own sections is [`Fault::Configuration`]: that candidate is
//! refused whole and the last valid configuration keeps serving. The marks
//! are read to *name* what is at fault; a wrong name costs at most one more
//! check, since the controller stops as soon as removing an object does not
//! cure the configuration.

use hawser_model::ObjectRef;

use crate::{CONFIG_PATH, Rendered};

/// What a refused configuration is blamed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// An object whose removal may cure the configuration.
    Object(ObjectRef),
    /// Something no object carries: a snippet, an override, or hawser's
    /// own lines (named when a mark says so).
    Configuration(Option<String>),
}

/// Blames the first alert of `output` (as `haproxy -c` printed it) on an
/// object of `rendered` where one is at fault.
pub fn fault_of(rendered: &Rendered, output: &str) -> Fault {
    let Some(alert) = output.lines().find(|line| line.contains("[ALERT]")) else {
        return Fault::Configuration(None);
    };
    // A certificate that OpenSSL will not load (`'certs/app_web.pem': ca md
    // too weak`) is named by its path; the bind line naming it is hawser's.
    for quoted in alert.split('\'').skip(1).step_by(2) {
        let source = rendered
            .plan
            .certificates
            .iter()
            .find(|certificate| certificate.path == quoted)
            .and_then(|certificate| ObjectRef::parse_prefix(&certificate.source));
        if let Some(object) = source {
            return Fault::Object(object);
        }
    }
    match (location(alert), rendered.files.text(CONFIG_PATH)) {
        (Some((CONFIG_PATH, line)), Some(config)) => fault_at(config, line),
        _ => Fault::Configuration(None),
    }
}

/// The file and 1-based line an alert names (`parsing [haproxy.cfg:12]`).
fn location(alert: &str) -> Option<(&str, usize)> {
    let start = alert.find("parsing [")? + "parsing [".len();
    let inside = &alert[start..start + alert[start..].find(']')?];
    let (file, line) = inside.rsplit_once(':')?;
    Some((file, line.parse().ok()?))
}

/// Blames line `line` (1-based) of `config`.
fn fault_at(config: &str, line: usize) -> Fault {
    let lines: Vec<&str> = config.lines().collect();
    let Some(index) = line.checked_sub(1).filter(|i| *i < lines.len()) else {
        return Fault::Configuration(None);
    };
    // A rule's actions name it (`if { var(txn.gw_rule) -m str r3 }`); its
    // conditions stand right under its comment (`# r3: HTTPRoute app/web ...`).
    let rule = rule_named_in(lines[index]).or_else(|| {
        let above = lines.get(index.checked_sub(1)?)?;
        rule_comment(above).map(|(id, _)| id)
    });
    if let Some(object) = rule.and_then(|id| {
        lines
            .iter()
            .find_map(|l| rule_comment(l).filter(|(rid, _)| *rid == id))
            .and_then(|(_, source)| ObjectRef::parse_prefix(source))
    }) {
        return Fault::Object(object);
    }
    for above in lines[..=index].iter().rev() {
        let above = above.trim_start();
        if let Some(name) = above.strip_prefix("# snippet: ") {
            return Fault::Configuration(Some(format!("snippet {name}")));
        }
        if let Some(source) = above.strip_prefix("# from: ") {
            return ObjectRef::parse_prefix(source).map_or_else(
                || Fault::Configuration(Some(source.to_string())),
                Fault::Object,
            );
        }
    }
    Fault::Configuration(None)
}

/// The rule id a line's condition names (`-m str r12 }`).
fn rule_named_in(line: &str) -> Option<&str> {
    let after = line.split("-m str ").nth(1)?;
    let id = after.split_whitespace().next()?;
    is_rule_id(id).then_some(id)
}

/// `(id, source)` of a rule's comment line (`# r12: HTTPRoute app/web rule 0 ...`).
fn rule_comment(line: &str) -> Option<(&str, &str)> {
    let (id, source) = line.trim_start().strip_prefix("# ")?.split_once(": ")?;
    is_rule_id(id).then_some((id, source))
}

fn is_rule_id(word: &str) -> bool {
    word.strip_prefix('r')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests;
