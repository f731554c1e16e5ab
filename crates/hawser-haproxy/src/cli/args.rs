//! Checking and escaping command arguments, so that a name can never split a
//! command line or start a second command.
//!
//! The CLI splits a line on spaces, runs each `;`-separated part as its own
//! command, and treats `\` as an escape. A `<<` payload is taken literally,
//! one entry per line, until an empty line.

use crate::SocketError;

/// `value` if it is one CLI word: non-empty, without whitespace, control
/// characters, `;` or `\`. Used for backend, server, map, certificate and
/// crt-list names, SNI filters and server keywords.
pub(crate) fn word<'a>(what: &'static str, value: &'a str) -> Result<&'a str, SocketError> {
    token(what, value)?;
    if value.contains([';', '\\']) {
        return Err(invalid(what, value, "it contains `;` or `\\`"));
    }
    Ok(value)
}

/// `value` is non-empty and holds no whitespace or control character.
fn token(what: &'static str, value: &str) -> Result<(), SocketError> {
    if value.is_empty() {
        return Err(invalid(what, value, "it is empty"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            what,
            value,
            "it contains whitespace or control characters",
        ));
    }
    Ok(())
}

fn invalid(what: &'static str, value: &str, reason: &'static str) -> SocketError {
    SocketError::InvalidArgument {
        what,
        value: value.to_owned(),
        reason,
    }
}

/// A map key for a one-line command (`set map`, `add map`, `del map`):
/// without whitespace (map files could not hold it), with `\` and `;`
/// escaped.
pub(crate) fn map_key(value: &str) -> Result<String, SocketError> {
    check_map_key(value)?;
    Ok(escape(value))
}

/// A map value for a one-line command, with spaces, `\` and `;` escaped:
/// unescaped, HAProxy would keep only the first word and drop the rest
/// without a word of warning.
pub(crate) fn map_value(value: &str) -> Result<String, SocketError> {
    check_map_value(value)?;
    Ok(escape(value))
}

/// One `key value` line of an `add map` payload, where nothing is escaped.
pub(crate) fn map_payload_line(key: &str, value: &str) -> Result<String, SocketError> {
    check_map_key(key)?;
    check_map_value(value)?;
    Ok(format!("{key} {value}"))
}

/// The lines of a PEM bundle for a `set ssl cert` payload: `\r` dropped and
/// blank lines removed, because an empty line ends the payload and whatever
/// follows (the private key) would be read as commands.
pub(crate) fn pem_lines(pem: &str) -> Result<Vec<&str>, SocketError> {
    let lines: Vec<&str> = pem
        .lines()
        .map(|line| line.trim_end_matches('\r'))
        .filter(|line| !line.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return Err(SocketError::InvalidArgument {
            what: "certificate payload",
            value: String::new(),
            reason: "it is empty",
        });
    }
    Ok(lines)
}

fn check_map_key(value: &str) -> Result<(), SocketError> {
    token("map key", value)
}

fn check_map_value(value: &str) -> Result<(), SocketError> {
    let what = "map value";
    if value.is_empty() {
        return Err(invalid(what, value, "it is empty"));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(what, value, "it contains control characters"));
    }
    if value.starts_with(char::is_whitespace) {
        return Err(invalid(
            what,
            value,
            "it starts with whitespace, which haproxy drops",
        ));
    }
    Ok(())
}

fn escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, ' ' | '\\' | ';') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_reject_anything_that_splits_a_command() {
        assert_eq!(word("backend name", "be_app").unwrap(), "be_app");
        for bad in ["", "a b", "a\nb", "a;b", "a\\b", "a\tb"] {
            assert!(word("backend name", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn one_line_map_arguments_are_escaped() {
        assert_eq!(map_value("be x;y\\z").unwrap(), "be\\ x\\;y\\\\z");
        assert_eq!(map_key("a;b").unwrap(), "a\\;b");
        assert!(map_key("a b").is_err());
        assert!(map_value("a\nb").is_err());
        assert!(map_value(" lead").is_err());
    }

    #[test]
    fn payload_lines_are_literal() {
        assert_eq!(
            map_payload_line("a.test", "be a;b\\c").unwrap(),
            "a.test be a;b\\c"
        );
        assert!(map_payload_line("", "v").is_err());
        assert!(map_payload_line("k", "").is_err());
    }

    #[test]
    fn pem_blank_lines_and_carriage_returns_are_dropped() {
        let pem = "-----BEGIN X-----\r\nAAA\r\n-----END X-----\r\n\r\n  \n-----BEGIN K-----\nBBB\n-----END K-----\n";
        assert_eq!(
            pem_lines(pem).unwrap(),
            [
                "-----BEGIN X-----",
                "AAA",
                "-----END X-----",
                "-----BEGIN K-----",
                "BBB",
                "-----END K-----"
            ]
        );
        assert!(pem_lines("\n\n").is_err());
    }
}
