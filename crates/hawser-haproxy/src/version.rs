//! HAProxy version numbers, as read from the `haproxy -v` banner.

use std::fmt;

/// An HAProxy release number; build suffixes (`-1`, `-e134140`, `-dev5`) are dropped.
///
/// Ordered by `major`, then `minor`, then `patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major release, e.g. 3 in 3.0.11.
    pub major: u32,
    /// Minor release, e.g. 0 in 3.0.11.
    pub minor: u32,
    /// Patch release, e.g. 11 in 3.0.11; 0 for development builds like `3.2-dev5`.
    pub patch: u32,
}

impl Version {
    /// The oldest HAProxy hawser's templates and runtime API calls support.
    pub const MINIMUM: Version = Version::new(3, 0, 0);

    /// A version from its parts.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Reads the version from the first line of `haproxy -v`, e.g.
    /// `HAProxy version 3.0.11-1 2025/06/02 - https://haproxy.org/` or the
    /// older `HA-Proxy version 2.4.22-f8e3218 ...`; `None` when the line has
    /// no `version X.Y` in it.
    pub fn from_banner(line: &str) -> Option<Self> {
        let mut words = line.split_whitespace();
        words.find(|word| word.eq_ignore_ascii_case("version"))?;
        let number = words.next()?;
        // Keep `3.0.11` of `3.0.11-1`, `3.2` of `3.2-dev5`.
        let end = number
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(number.len());
        let mut parts = number[..end].split('.').map(str::parse::<u32>);
        let major = parts.next()?.ok()?;
        let minor = parts.next()?.ok()?;
        let patch = match parts.next() {
            Some(patch) => patch.ok()?,
            None => 0,
        };
        Some(Self::new(major, minor, patch))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_release_and_build_banners() {
        let cases = [
            (
                "HAProxy version 3.0.11-1 2025/06/02 - https://haproxy.org/",
                (3, 0, 11),
            ),
            (
                "HAProxy version 3.0.11-9e587df 2025/06/02 - https://haproxy.org/",
                (3, 0, 11),
            ),
            (
                "HAProxy version 3.2.0-e134140 2025/05/28 - https://haproxy.org/",
                (3, 2, 0),
            ),
            (
                "HAProxy version 3.1.0 2024/11/26 - https://haproxy.org/",
                (3, 1, 0),
            ),
            (
                "HAProxy version 3.2-dev5-abc 2025/02/05 - https://haproxy.org/",
                (3, 2, 0),
            ),
            (
                "HA-Proxy version 2.4.22-f8e3218 2023/02/14 - https://haproxy.org/",
                (2, 4, 22),
            ),
        ];
        for (line, (major, minor, patch)) in cases {
            assert_eq!(
                Version::from_banner(line),
                Some(Version::new(major, minor, patch)),
                "{line}"
            );
        }
    }

    #[test]
    fn rejects_lines_without_a_version() {
        for line in [
            "",
            "HAProxy",
            "HAProxy version",
            "HAProxy version x.y",
            "HAProxy version 3",
        ] {
            assert_eq!(Version::from_banner(line), None, "{line:?}");
        }
    }

    #[test]
    fn orders_numerically_and_displays_dotted() {
        assert!(Version::new(3, 0, 11) > Version::new(3, 0, 9));
        assert!(Version::new(3, 10, 0) > Version::new(3, 2, 0));
        assert!(Version::new(2, 9, 99) < Version::MINIMUM);
        assert_eq!(Version::new(3, 0, 11).to_string(), "3.0.11");
    }
}
