//! Checks on every string that travels from a Kubernetes object into HAProxy's
//! configuration or its map files.
//!
//! These are allow-lists: a value is accepted only if every character is one
//! HAProxy reads literally in the place the value goes. Anything else (a line
//! break, `#`, a quote, a space, a backslash) rejects the object that carried it,
//! so it can never become an extra directive or an extra map entry.

mod haproxy_regex;

pub use haproxy_regex::{RegexError, compile_like_haproxy};

/// The longest regular expression a route may carry, in bytes.
pub const MAX_REGEX_LEN: usize = 1024;

/// Why a value cannot go into HAProxy's configuration or a map file. The
/// message names what the value is for (`what`), the value, and what is
/// expected; the render turns it into the rejection of the object that
/// carried the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidValue {
    #[error("{what} {value:?} must be 1 to {max} characters")]
    Length {
        what: String,
        value: String,
        max: usize,
    },
    #[error("host {value:?}: a wildcard may only be the whole first label (\"*.example.com\")")]
    Wildcard { value: String },
    #[error("{what} {value:?}: {reason}")]
    Label {
        what: String,
        value: String,
        #[source]
        reason: InvalidLabel,
    },
    #[error("path {value:?} must start with '/'")]
    PathStart { value: String },
    #[error("path {value:?} is longer than 2048 characters")]
    PathLength { value: String },
    #[error("path {value:?} holds {character:?}, which is not allowed in a URL path")]
    PathCharacter { value: String, character: char },
    #[error("address {value:?} is not an IP address")]
    Address { value: String },
    #[error("{what} {value:?} is not a duration (digits and one of us, ms, s, m, h, d)")]
    Duration { what: String, value: String },
    #[error(
        "{value:?} must be an absolute, normalized path (no '.', '..' or empty parts) of letters, digits, '/', '.', '_' and '-'"
    )]
    AbsolutePath { value: String },
    #[error("{what} {value} is not a port between 1 and 65535")]
    Port { what: String, value: i32 },
    #[error("{what} {value:?} must be 1 to 256 letters, digits or any of !$&*+-.^_|~")]
    HeaderName { what: String, value: String },
    #[error("{what} is longer than 4096 characters")]
    HeaderValueLength { what: String },
    #[error("{what} {value:?} holds {character:?}, which is not allowed")]
    HeaderValueCharacter {
        what: String,
        value: String,
        character: char,
    },
    #[error("{what} is empty")]
    EmptyRegex { what: String },
    #[error(
        "{what} is {length} bytes long; the limit for a regular expression is {MAX_REGEX_LEN} bytes"
    )]
    RegexLength { what: String, length: usize },
    #[error("{what} {value:?} holds {character:?}, which is not allowed in a regular expression")]
    RegexCharacter {
        what: String,
        value: String,
        character: char,
    },
    #[error("{what} {value:?} {reason}")]
    Regex {
        what: String,
        value: String,
        #[source]
        reason: RegexError,
    },
    #[error("{what} {value:?} is not a valid gRPC name")]
    GrpcName { what: String, value: String },
}

/// Why a DNS label is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidLabel {
    #[error("label {0:?} must be 1 to 63 characters")]
    Length(String),
    #[error("label {0:?} may hold only lowercase letters, digits and inner '-'")]
    Characters(String),
}

/// The render's diagnostics are text: an invalid value becomes the message
/// of the object it rejects.
impl From<InvalidValue> for String {
    fn from(invalid: InvalidValue) -> String {
        invalid.to_string()
    }
}

/// A DNS-1123 subdomain as Kubernetes defines it for Ingress hosts, optionally
/// with one leading `*.` label. Lowercase only; at most 253 characters.
pub fn host(value: &str) -> Result<(), InvalidValue> {
    let name = value.strip_prefix("*.").unwrap_or(value);
    if name.is_empty() || value.len() > 253 {
        return Err(InvalidValue::Length {
            what: "host".to_string(),
            value: value.to_string(),
            max: 253,
        });
    }
    if name.contains('*') {
        return Err(InvalidValue::Wildcard {
            value: value.to_string(),
        });
    }
    labels("host", value, name)
}

/// Each dot-separated label of `name` (`value` less any wildcard).
fn labels(what: &str, value: &str, name: &str) -> Result<(), InvalidValue> {
    for label in name.split('.') {
        dns_label(label).map_err(|reason| InvalidValue::Label {
            what: what.to_string(),
            value: value.to_string(),
            reason,
        })?;
    }
    Ok(())
}

fn dns_label(label: &str) -> Result<(), InvalidLabel> {
    let valid_chars = label
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if label.is_empty() || label.len() > 63 {
        return Err(InvalidLabel::Length(label.to_string()));
    }
    if !valid_chars || label.starts_with('-') || label.ends_with('-') {
        return Err(InvalidLabel::Characters(label.to_string()));
    }
    Ok(())
}

/// A DNS-1123 label, as Kubernetes requires of namespaces and Service names.
pub fn label_name(what: &str, value: &str) -> Result<(), InvalidValue> {
    dns_label(value).map_err(|reason| InvalidValue::Label {
        what: what.to_string(),
        value: value.to_string(),
        reason,
    })
}

/// A DNS-1123 subdomain (Secret, Ingress and EndpointSlice names may hold dots).
pub fn subdomain_name(what: &str, value: &str) -> Result<(), InvalidValue> {
    if value.is_empty() || value.len() > 253 {
        return Err(InvalidValue::Length {
            what: what.to_string(),
            value: value.to_string(),
            max: 253,
        });
    }
    labels(what, value, value)
}

/// An HTTP path for a route: starts with `/` and holds only RFC 3986 path
/// characters (unreserved, sub-delims other than `'`, `:`, `@`, `/`, and
/// percent-escapes). No space, `#`, `?`, quote or backslash can pass.
pub fn path(value: &str) -> Result<(), InvalidValue> {
    if !value.starts_with('/') {
        return Err(InvalidValue::PathStart {
            value: value.to_string(),
        });
    }
    if value.len() > 2048 {
        return Err(InvalidValue::PathLength {
            value: value.to_string(),
        });
    }
    let bytes = value.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let allowed = b.is_ascii_alphanumeric()
            || b"-._~!$&()*+,;=:@/".contains(&b)
            || (b == b'%'
                && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit));
        if !allowed {
            return Err(InvalidValue::PathCharacter {
                value: value.to_string(),
                character: char::from(b),
            });
        }
    }
    Ok(())
}

/// An endpoint address: an IP address in canonical form (written back as
/// parsed, so nothing else can ride along).
pub fn ip_address(value: &str) -> Result<String, InvalidValue> {
    match value.parse::<std::net::IpAddr>() {
        // An IPv4 address parses only as written canonically (no leading
        // zero, four decimal octets): it is its own text.
        Ok(std::net::IpAddr::V4(_)) => Ok(value.to_string()),
        Ok(ip) => Ok(ip.to_string()),
        Err(_) => Err(InvalidValue::Address {
            value: value.to_string(),
        }),
    }
}

/// A duration as HAProxy reads it: digits and an optional unit.
pub fn duration(what: &str, value: &str) -> Result<(), InvalidValue> {
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &value[digits.len()..];
    let ok = !digits.is_empty()
        && digits.len() <= 9
        && digits.bytes().all(|b| b.is_ascii_digit())
        && ["", "us", "ms", "s", "m", "h", "d"].contains(&unit);
    if ok {
        Ok(())
    } else {
        Err(InvalidValue::Duration {
            what: what.to_string(),
            value: value.to_string(),
        })
    }
}

/// An absolute, normalized file path of plain characters (letters, digits,
/// `/._-`): no `.` or `..` component, no `//`, no trailing `/`. The config
/// policy trusts these paths as they are written, so they must name one file
/// one way.
pub fn absolute_path(value: &str) -> Result<(), InvalidValue> {
    let plain = value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b));
    let normalized = value.len() > 1
        && value[1..]
            .split('/')
            .all(|part| !matches!(part, "" | "." | ".."));
    if value.starts_with('/') && plain && normalized {
        Ok(())
    } else {
        Err(InvalidValue::AbsolutePath {
            value: value.to_string(),
        })
    }
}

/// A port number, 1 to 65535.
pub fn port(what: &str, value: i32) -> Result<u16, InvalidValue> {
    u16::try_from(value)
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| InvalidValue::Port {
            what: what.to_string(),
            value,
        })
}

/// An HTTP header (or query parameter) name: an RFC 7230 token without the
/// characters HAProxy's configuration treats specially (`#`, `'`, `` ` ``).
pub fn header_name(what: &str, value: &str) -> Result<(), InvalidValue> {
    let ok = !value.is_empty()
        && value.len() <= 256
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!$&*+-.^_|~".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(InvalidValue::HeaderName {
            what: what.to_string(),
            value: value.to_string(),
        })
    }
}

/// A literal value matched against or written into a header or query
/// parameter: printable ASCII and spaces, without quotes, backslashes, `#`
/// or `%` (which HAProxy's log-format strings expand).
pub fn header_value(what: &str, value: &str) -> Result<(), InvalidValue> {
    if value.len() > 4096 {
        return Err(InvalidValue::HeaderValueLength {
            what: what.to_string(),
        });
    }
    match value
        .bytes()
        .find(|b| !(b' '..=b'~').contains(b) || b"\"'\\#%`".contains(b))
    {
        None => Ok(()),
        Some(b) => Err(InvalidValue::HeaderValueCharacter {
            what: what.to_string(),
            value: value.to_string(),
            character: char::from(b),
        }),
    }
}

/// A regular expression for HAProxy: printable ASCII without spaces, quotes,
/// `#` or `%`, at most [`MAX_REGEX_LEN`] bytes, that PCRE2 compiles with
/// HAProxy's own options (see the `haproxy_regex` module) both on its own and in the
/// form the templates give HAProxy, `^(<regex>)$` (gRPC names: each part
/// alike). So HAProxy cannot fail to compile it and stop a whole
/// configuration, and a stray `)` cannot move the anchors. A backslash is
/// kept (regexes need it): where a template writes the expression, it must
/// write it where HAProxy reads it literally or escape it.
pub fn regex(what: &str, value: &str) -> Result<(), InvalidValue> {
    if value.is_empty() {
        return Err(InvalidValue::EmptyRegex {
            what: what.to_string(),
        });
    }
    if value.len() > MAX_REGEX_LEN {
        return Err(InvalidValue::RegexLength {
            what: what.to_string(),
            length: value.len(),
        });
    }
    if let Some(b) = value
        .bytes()
        .find(|b| !(b'!'..=b'~').contains(b) || b"\"'#%`".contains(b))
    {
        return Err(InvalidValue::RegexCharacter {
            what: what.to_string(),
            value: value.to_string(),
            character: char::from(b),
        });
    }
    compile_like_haproxy(value, false)
        .and_then(|()| compile_like_haproxy(&format!("^({value})$"), false))
        .map_err(|reason| InvalidValue::Regex {
            what: what.to_string(),
            value: value.to_string(),
            reason,
        })
}

/// A gRPC service (`pkg.Service`) or method (`Get`) name.
pub fn grpc_name(what: &str, value: &str, dotted: bool) -> Result<(), InvalidValue> {
    let part_ok = |part: &str| {
        part.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let ok = value.len() <= 1024
        && if dotted {
            value.split('.').all(part_ok)
        } else {
            part_ok(value)
        };
    if ok {
        Ok(())
    } else {
        Err(InvalidValue::GrpcName {
            what: what.to_string(),
            value: value.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        for ok in ["example.com", "*.example.com", "a-b.c0", "x"] {
            assert_eq!(host(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "Example.com",
            "*.",
            "a.*.com",
            "*example.com",
            "-a.com",
            "a..com",
            "a.com\nbind :1",
            "a.com #x",
            "a\"b.com",
            "a b.com",
        ] {
            assert!(host(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn paths() {
        for ok in ["/", "/a/b", "/a%20b", "/~u/x.y-z_(1)", "/a:b@c"] {
            assert_eq!(path(ok), Ok(()), "{ok}");
        }
        for bad in [
            "", "a", "/a b", "/a#b", "/a\nb", "/a\"b", "/a'b", "/a?b", "/a\\b", "/%zz", "/%2",
        ] {
            assert!(path(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn durations() {
        for ok in ["5s", "100ms", "30", "1h"] {
            assert_eq!(duration("timeout", ok), Ok(()), "{ok}");
        }
        for bad in ["", "s", "5 s", "5s\n", "5x", "-1s", "5s#"] {
            assert!(duration("timeout", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn addresses_are_canonical() {
        assert_eq!(ip_address("127.0.0.2"), Ok("127.0.0.2".to_string()));
        assert_eq!(ip_address("fd00:0::1"), Ok("fd00::1".to_string()));
        assert!(ip_address("127.0.0.2 backup").is_err());
        // Not canonical, so not taken as written.
        for bad in [
            "010.0.0.1",
            "10.0.0.01",
            "10.0.1",
            "0x7f.0.0.1",
            " 10.0.0.1",
        ] {
            assert!(ip_address(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn header_names_values_and_regexes() {
        assert_eq!(header_name("header", "X-Foo_1"), Ok(()));
        for bad in ["", "a b", "a#b", "a'b", "a:b", "a\nb"] {
            assert!(header_name("header", bad).is_err(), "{bad:?}");
        }
        assert_eq!(header_value("value", "a b/c=d;e"), Ok(()));
        for bad in ["a\"b", "a\\b", "a#b", "100%", "a\nb", "a\tb"] {
            assert!(header_value("value", bad).is_err(), "{bad:?}");
        }
        assert_eq!(regex("regex", "^/v[0-9]+/.*\\.png$"), Ok(()));
        for bad in ["", "a b", "a\"b", "a#b", "a\nb", "(a", "a{2,1}", "(a)\\1"] {
            assert!(regex("regex", bad).is_err(), "{bad:?}");
        }
        assert_eq!(grpc_name("service", "pkg.v1.Echo", true), Ok(()));
        assert_eq!(grpc_name("method", "Get_1", false), Ok(()));
        for bad in ["", "1a", "a..b", "a-b", "a.b"] {
            assert!(grpc_name("method", bad, false).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn regexes_are_judged_by_pcre2_as_haproxy_compiles_them() {
        // regex_lite took this; PCRE2 without UTF does not.
        let e = regex("path regex", r"/\x{100}")
            .expect_err("code point")
            .to_string();
        assert!(
            e.starts_with(r#"path regex "/\\x{100}" does not compile"#),
            "{e}"
        );
        assert!(regex("path regex", "/a(b").is_err());
        // Balanced only once wrapped in `^(...)$`: refused, so a stray `)`
        // cannot move the anchors.
        assert!(regex("path regex", "/a)|(/b").is_err());
        // `\Q` quotes to the end: fine alone, broken once wrapped.
        assert!(regex("path regex", r"/\Qa").is_err());
        for ok in [r"/(?<=v1/)items", r"/(?<!x)y", r"/a(?=b).*", r"/a++b"] {
            assert_eq!(regex("path regex", ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn an_over_long_regex_names_the_limit() {
        let long = format!("/{}", "a".repeat(MAX_REGEX_LEN));
        let e = regex("header x regex", &long)
            .expect_err("too long")
            .to_string();
        assert_eq!(
            e,
            "header x regex is 1025 bytes long; the limit for a regular expression is 1024 bytes"
        );
        assert_eq!(regex("header x regex", &long[1..]), Ok(()));
    }
}
