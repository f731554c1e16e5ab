//! Annotation values as types: each parser names what it expects, so a bad
//! value is refused with the annotation, the value and the expectation.

use std::fmt;
use std::net::IpAddr;

use crate::validate;

/// An IPv4 or IPv6 network (`10.0.0.0/8`, `2001:db8::/32`; a bare address is
/// one host), written back canonically: nothing else can ride along.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    pub address: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// Whether `ip` is in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let (network, ip, bits) = match (self.address, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                (u128::from(u32::from(n)), u128::from(u32::from(a)), 32)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => (u128::from(n), u128::from(a), 128),
            _ => return false,
        };
        let host_bits = bits - u32::from(self.prefix.min(bits as u8));
        host_bits >= 128 || network >> host_bits == ip >> host_bits
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

/// What a value should have been, for the error message.
pub type Expected = &'static str;

pub fn boolean(value: &str) -> Result<bool, Expected> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("true or false"),
    }
}

/// A whole number of seconds, at most ten years.
pub fn seconds(value: &str) -> Result<u64, Expected> {
    whole_number(value.trim(), 0..=315_360_000)
        .ok_or("a whole number of seconds (at most 315360000)")
}

/// A whole number in `range`, `expected` saying which.
pub fn count(
    value: &str,
    range: std::ops::RangeInclusive<u64>,
    expected: Expected,
) -> Result<u64, Expected> {
    whole_number(value.trim(), range).ok_or(expected)
}

/// Decimal digits only (no sign, no exponent), within `range`.
fn whole_number(text: &str, range: std::ops::RangeInclusive<u64>) -> Option<u64> {
    let digits = !text.is_empty() && text.len() <= 18 && text.bytes().all(|b| b.is_ascii_digit());
    digits
        .then(|| text.parse::<u64>().ok())
        .flatten()
        .filter(|n| range.contains(n))
}

/// A size as ingress-nginx writes it: bytes, or a number with `k`, `m` or
/// `g` (binary multiples); `0` is no limit (`None`).
pub fn body_size(value: &str) -> Result<Option<u64>, Expected> {
    const EXPECTED: Expected =
        "a size (bytes, or a number with k, m or g, e.g. 8m; 0 for no limit)";
    let text = value.trim().to_ascii_lowercase();
    let (digits, unit) = match text.strip_suffix(['k', 'm', 'g']) {
        Some(digits) => (digits, &text[digits.len()..]),
        None => (text.as_str(), ""),
    };
    let number = whole_number(digits, 0..=999_999_999_999).ok_or(EXPECTED)?;
    let multiple: u64 = match unit {
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => 1,
    };
    let bytes = number.checked_mul(multiple).ok_or(EXPECTED)?;
    // HAProxy's integers are signed 64-bit.
    if bytes > i64::MAX as u64 {
        return Err(EXPECTED);
    }
    Ok((bytes > 0).then_some(bytes))
}

/// A rewrite target: a path whose `$1`…`$9` name captures of the route's
/// path, written back as HAProxy's `replace-path` format (`\1`, `%` as
/// `%%`).
pub fn rewrite_target(value: &str) -> Result<String, Expected> {
    const EXPECTED: Expected =
        "a path starting with '/' of URL path characters, with $1 to $9 for captures";
    if !value.starts_with('/') || value.len() > 1024 {
        return Err(EXPECTED);
    }
    let mut format = String::with_capacity(value.len());
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => match chars.next() {
                Some(d @ '1'..='9') => {
                    format.push('\\');
                    format.push(d);
                }
                _ => return Err(EXPECTED),
            },
            '%' => format.push_str("%%"),
            c if c.is_ascii_alphanumeric() || "-._~!&()*+,;=:@/".contains(c) => format.push(c),
            _ => return Err(EXPECTED),
        }
    }
    Ok(format)
}

/// One of `allowed` status codes.
pub fn code(value: &str, allowed: &[u16], expected: Expected) -> Result<u16, Expected> {
    value
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|c| allowed.contains(c))
        .ok_or(expected)
}

/// A comma-separated list of networks, at least one, at most 1024.
pub fn cidr_list(value: &str) -> Result<Vec<Cidr>, Expected> {
    const EXPECTED: Expected =
        "a comma-separated list of IPv4 or IPv6 addresses or networks (10.0.0.0/8, 2001:db8::/32)";
    let mut list = Vec::new();
    for part in value.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        list.push(cidr(part).ok_or(EXPECTED)?);
    }
    if list.is_empty() || list.len() > 1024 {
        return Err(EXPECTED);
    }
    list.sort();
    list.dedup();
    Ok(list)
}

fn cidr(text: &str) -> Option<Cidr> {
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text, None),
    };
    let address: IpAddr = address.parse().ok()?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        None => max,
        Some(p) if !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse::<u8>().ok().filter(|p| *p <= max)?
        }
        Some(_) => return None,
    };
    Some(Cidr { address, prefix })
}

/// An absolute `http://` or `https://` URL of printable characters that a
/// `Location` header carries as it is: no spaces, quotes, backslashes or
/// angle brackets, at most 2048 bytes.
pub fn url(value: &str) -> Result<String, Expected> {
    const EXPECTED: Expected =
        "an absolute http:// or https:// URL without spaces, quotes, backslashes or angle brackets";
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"))
        .ok_or(EXPECTED)?;
    let clean = value
        .bytes()
        .all(|b| (b'!'..=b'~').contains(&b) && !b"\"'\\<>`".contains(&b));
    if rest.is_empty() || rest.starts_with('/') || !clean || value.len() > 2048 {
        return Err(EXPECTED);
    }
    Ok(value.to_string())
}

/// Headers HAProxy or the connection own: setting them would break the
/// exchange or its routing.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

/// A lowercase header name hawser may set: letters, digits and `-`, at
/// most 64, not one HAProxy or the connection owns.
pub(super) fn settable_header(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !RESERVED_HEADERS.contains(&name)
}

/// A name of letters, digits, `-` and `_` (a cookie's, a header's), at
/// most 64.
pub(super) fn name_token(value: &str) -> Result<String, Expected> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then(|| value.to_string())
        .ok_or("a name of letters, digits, - and _")
}

/// `Name: value` lines (at most 32), names of letters, digits and `-`
/// (not one HAProxy or the connection owns), values of printable ASCII.
/// Names are kept lowercase.
pub fn header_lines(value: &str) -> Result<std::collections::BTreeMap<String, String>, Expected> {
    const EXPECTED: Expected = "\"Name: value\" lines (names of letters, digits and -, not Host, Content-Length, Transfer-Encoding or a hop-by-hop header; values of printable characters)";
    let mut headers = std::collections::BTreeMap::new();
    for line in value.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or(EXPECTED)?;
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim();
        let name_ok = settable_header(&name);
        let value_ok = !value.is_empty()
            && value.len() <= 1024
            && value.bytes().all(|b| (b' '..=b'~').contains(&b));
        if !name_ok || !value_ok || headers.insert(name, value.to_string()).is_some() {
            return Err(EXPECTED);
        }
    }
    if headers.is_empty() || headers.len() > 32 {
        return Err(EXPECTED);
    }
    Ok(headers)
}

/// A URL path (see [`validate::path`]).
pub fn path(value: &str) -> Result<String, Expected> {
    validate::path(value)
        .map(|()| value.to_string())
        .map_err(|_| "a path starting with '/' of URL path characters")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_are_parsed_and_written_canonically() {
        let list = cidr_list("10.0.0.0/8, 192.168.1.7 ,2001:db8:0::/32,10.0.0.0/8").unwrap();
        let text: Vec<String> = list.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["10.0.0.0/8", "192.168.1.7/32", "2001:db8::/32"]);
        for bad in [
            "",
            ",",
            "10.0.0.0/33",
            "10.0.0/8",
            "10.0.0.0/",
            "10.0.0.0/8 #x",
            "10.0.0.0/8\nbind :1",
            "::1/129",
            "example.com",
        ] {
            assert!(cidr_list(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn urls_must_be_absolute_and_plain() {
        assert_eq!(
            url("https://example.com/a?b=c%20d").unwrap(),
            "https://example.com/a?b=c%20d"
        );
        for bad in [
            "/relative",
            "ftp://x",
            "https://",
            "https:///x",
            "https://a b",
            "https://a\"b",
            "https://a\r\nX-Evil: 1",
            "https://a<b>",
        ] {
            assert!(url(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn seconds_booleans_and_codes() {
        assert_eq!(seconds("31536000"), Ok(31_536_000));
        assert!(seconds("-1").is_err() && seconds("1e3").is_err() && seconds("").is_err());
        assert_eq!(boolean("true"), Ok(true));
        assert!(boolean("yes").is_err());
        assert_eq!(code("308", &[301, 308], "x"), Ok(308));
        assert!(code("200", &[301, 308], "x").is_err());
    }
}
