//! Regular expressions compiled the way HAProxy compiles them, so that a
//! pattern hawser accepts can never fail `haproxy -c` and stop a whole
//! configuration.
//!
//! HAProxy 3.0 built with `USE_PCRE2` and `USE_PCRE2_JIT` (as Debian's and
//! hawser's own builds are; `haproxy -vv` lists `+PCRE2 +PCRE2_JIT`) compiles an
//! ACL's `-m reg` pattern in `regex_comp()` (`src/regex.c`), called by
//! `pat_idx_list_reg()` (`src/pattern.c`) with `cap = 0`:
//!
//! ```c
//! if (!cs)  flags |= PCRE2_CASELESS;          /* the ACL's -i */
//! if (!cap) flags |= PCRE2_NO_AUTO_CAPTURE;
//! regex->reg = pcre2_compile(str, PCRE2_ZERO_TERMINATED, flags, ...);
//! jit = pcre2_jit_compile(regex->reg, PCRE2_JIT_COMPLETE);
//! /* any JIT error but PCRE2_ERROR_JIT_BADOPTION (no JIT) fails the regex */
//! ```
//!
//! No UTF and no UCP: `\x{100}` is refused, as HAProxy refuses it. The same
//! library does the compiling here (the system's libpcre2-8 when it can be
//! found, otherwise PCRE2's own source built with JIT).

use pcre2::bytes::RegexBuilder;

/// `(?n)` is PCRE2_NO_AUTO_CAPTURE written inline: the binding has no builder
/// option for it. At the very start of a pattern it is the same as the option.
const NO_AUTO_CAPTURE: &str = "(?n)";

/// Why PCRE2 (as HAProxy calls it) refuses a pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegexError {
    #[error("does not compile with PCRE2 as HAProxy compiles it{at}: {message}")]
    Compile { message: String, at: Offset },
    #[error("PCRE2's JIT cannot compile it, so HAProxy would refuse it: {message}")]
    Jit { message: String },
}

/// Where in the caller's pattern PCRE2 stopped, if it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset(Option<usize>);

impl std::fmt::Display for Offset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(offset) => write!(f, " (at byte {offset})"),
            None => Ok(()),
        }
    }
}

/// Compiles `pattern` exactly as HAProxy's `regex_comp(pattern, !caseless,
/// cap = 0)` does, JIT included when the library has one.
pub fn compile_like_haproxy(pattern: &str, caseless: bool) -> Result<(), RegexError> {
    let mut builder = RegexBuilder::new();
    builder.caseless(caseless).utf(false).ucp(false);
    // HAProxy's build has JIT; where this library has none, HAProxy's own
    // fallback (PCRE2_ERROR_JIT_BADOPTION: interpret) applies.
    builder.jit(pcre2::is_jit_available());
    builder
        .build(&format!("{NO_AUTO_CAPTURE}{pattern}"))
        .map(drop)
        .map_err(|e| match e.kind() {
            pcre2::ErrorKind::JIT => RegexError::Jit {
                message: pcre2_message(&e),
            },
            _ => RegexError::Compile {
                message: pcre2_message(&e),
                at: Offset(
                    e.offset()
                        .map(|o| o.saturating_sub(NO_AUTO_CAPTURE.len()).min(pattern.len())),
                ),
            },
        })
}

/// PCRE2's own words, without the binding's "PCRE2: error compiling pattern
/// at offset N: " (the offset is given relative to the caller's pattern).
fn pcre2_message(e: &pcre2::Error) -> String {
    let text = e.to_string();
    text.split_once(" pattern")
        .and_then(|(_, rest)| rest.split_once(": "))
        .map_or_else(|| text.clone(), |(_, message)| message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(pattern: &str) -> RegexError {
        compile_like_haproxy(pattern, false).expect_err(pattern)
    }

    #[test]
    fn a_code_point_above_255_is_refused_without_utf() {
        let e = refused(r"/\x{100}");
        assert!(matches!(e, RegexError::Compile { .. }), "{e}");
        assert!(e.to_string().contains("too large"), "{e}");
        assert_eq!(compile_like_haproxy(r"/\x{ff}", false), Ok(()));
    }

    #[test]
    fn an_unbalanced_group_is_refused_with_its_offset() {
        let e = refused("/a(b");
        assert!(e.to_string().contains("missing closing parenthesis"), "{e}");
        assert!(e.to_string().contains("(at byte 4)"), "{e}");
        assert!(matches!(refused("/a)b"), RegexError::Compile { .. }));
    }

    #[test]
    fn look_around_and_possessive_forms_pcre2_knows_are_accepted() {
        for ok in [
            r"/(?<=v1/)items",
            r"/(?<!admin)/x",
            r"/a(?=b)",
            r"/a++b",
            r"/(?i)API/\d+",
            r"/(?<name>[a-z]+)/\k<name>",
        ] {
            assert_eq!(compile_like_haproxy(ok, false), Ok(()), "{ok}");
        }
    }

    #[test]
    fn numbered_back_references_fail_as_no_group_captures() {
        // HAProxy sets PCRE2_NO_AUTO_CAPTURE: `(a)` captures nothing.
        assert!(matches!(refused(r"(a)\1"), RegexError::Compile { .. }));
    }

    #[test]
    fn caseless_is_the_acl_dash_i() {
        assert_eq!(compile_like_haproxy("/[a-z]+", true), Ok(()));
        assert!(compile_like_haproxy("/[z-a]", true).is_err());
    }
}
