//! Splits a configuration file into lines and words as HAProxy 3.0 does, so
//! the policy judges the words HAProxy will act on, not the text a reader
//! sees.
//!
//! Followed: HAProxy 3.0.0 `src/cfgparse.c` `readcfgfile()` (a line is what
//! `fgets()` returns, up to `\n`; leading spaces skipped; an empty first word
//! makes an empty line; `no`/`default` prefixes; at most `MAX_LINE_ARGS` = 64
//! words, `include/haproxy/defaults.h`) and `src/tools.c` `parse_line()` with
//! the options `readcfgfile()` passes (`PARSE_OPT_ENV | DQUOTE | SQUOTE |
//! BKSLASH | SHARP | WORD_EXPAND`):
//!
//! - `\0`, `\n` and `\r` end the line (the rest of a line after a `\r` is
//!   never read);
//! - `#` outside quotes starts a comment, also in the middle of a word;
//! - `"` toggles double quotes outside single quotes, `'` toggles single
//!   quotes outside double quotes; quotes join words and are removed;
//! - outside single quotes a backslash escapes ` `, `\`, `#`, `'`, `"`,
//!   `t`, `n`, `r`, `xHH` (a truncated `\x` is an error); `\$` only inside
//!   double quotes; any other backslash is kept as it is;
//! - unquoted spaces (`isspace()`) separate words;
//! - `$NAME`, `${NAME}`, `${NAME-default}`, `${NAME[*]}` and the
//!   pseudo-variables `.LINE`, `.FILE`, `.SECTION` are expanded from the
//!   environment inside double quotes only (a `$` elsewhere is a plain
//!   character).
//!
//! There is no line continuation: a backslash at the end of a line is a
//! plain backslash, and the next line is a line of its own.

use std::ops::Range;

/// One word as HAProxy sees it after unquoting and unescaping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The bytes HAProxy would pass on (environment expansion not applied).
    pub bytes: Vec<u8>,
    /// A `$` inside double quotes: HAProxy would substitute the environment.
    pub expands_environment: bool,
}

impl Word {
    /// The word as text (invalid UTF-8 replaced), for matching and messages.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Why HAProxy would refuse to read a line at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineFault {
    UnmatchedQuote,
    BadHexEscape,
    /// A NUL byte, raw or from `\x00`: HAProxy's C strings end there, so
    /// what it acts on is not what the line shows.
    Nul,
    TooManyWords,
}

impl LineFault {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::UnmatchedQuote => "an unmatched quote",
            Self::BadHexEscape => "a truncated or invalid \\x escape",
            Self::Nul => "a NUL character",
            Self::TooManyWords => "more than 64 words",
        }
    }
}

/// One line of the file, numbered from 1 as HAProxy numbers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    pub number: u32,
    /// The raw text, without its `\n`.
    pub raw: &'a [u8],
    pub words: Vec<Word>,
    pub fault: Option<LineFault>,
}

/// HAProxy's `MAX_LINE_ARGS`.
const MAX_WORDS: usize = 64;

/// Every line of `config`, split as `readcfgfile()` splits it.
pub(crate) fn lines(config: &[u8]) -> impl Iterator<Item = Line<'_>> {
    lines_from(config, 1)
}

/// The lines of `text`, a run of whole lines of a configuration whose
/// first is line `first`.
pub(crate) fn lines_from(text: &[u8], first: u32) -> impl Iterator<Item = Line<'_>> {
    // `fgets()` reads up to each `\n`; a final `\n` starts no line.
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let pieces = (!text.is_empty()).then(|| body.split(|b| *b == b'\n'));
    pieces
        .into_iter()
        .flatten()
        .zip(first..)
        .map(|(raw, number)| {
            let (words, fault) = words(raw);
            Line {
                number,
                raw,
                words,
                fault,
            }
        })
}

/// `readcfgfile()`'s leading-space skip, then `parse_line()`, on one line.
fn words(raw: &[u8]) -> (Vec<Word>, Option<LineFault>) {
    let mut words = Vec::new();
    let mut fault = raw.contains(&0).then_some(LineFault::Nul);
    let mut current = Word {
        bytes: Vec::new(),
        expands_environment: false,
    };
    let (mut squote, mut dquote) = (false, false);
    // `isspace()`: a leading `\r` is skipped too, and what follows it is read.
    let mut at = raw
        .iter()
        .position(|b| !b" \t\r\x0b\x0c".contains(b))
        .unwrap_or(raw.len());
    while let Some(&c) = raw.get(at) {
        let next = raw.get(at + 1).copied();
        match c {
            0 | b'\r' => break,
            b'#' if !squote && !dquote => break,
            b'"' if !squote => {
                dquote = !dquote;
                at += 1;
            }
            b'\'' if !dquote => {
                squote = !squote;
                at += 1;
            }
            b'\\' if !squote => {
                let (byte, used) = match next {
                    Some(b' ' | b'\\' | b'#' | b'\'' | b'"') => (next.unwrap_or(b'\\'), 2),
                    Some(b't') => (b'\t', 2),
                    Some(b'n') => (b'\n', 2),
                    Some(b'r') => (b'\r', 2),
                    Some(b'$') if dquote => (b'$', 2),
                    Some(b'x') => match hex(raw.get(at + 2..at + 4)) {
                        Some(byte) => (byte, 4),
                        None => {
                            fault.get_or_insert(LineFault::BadHexEscape);
                            break;
                        }
                    },
                    _ => (b'\\', 1),
                };
                if byte == 0 {
                    fault.get_or_insert(LineFault::Nul);
                }
                current.bytes.push(byte);
                at += used;
            }
            b' ' | b'\t' | 0x0b | 0x0c if !squote && !dquote => {
                while matches!(raw.get(at), Some(b' ' | b'\t' | 0x0b | 0x0c)) {
                    at += 1;
                }
                words.push(std::mem::replace(
                    &mut current,
                    Word {
                        bytes: Vec::new(),
                        expands_environment: false,
                    },
                ));
            }
            b'$' if dquote => {
                current.expands_environment = true;
                current.bytes.push(c);
                at += 1;
            }
            _ => {
                current.bytes.push(c);
                at += 1;
            }
        }
    }
    if squote || dquote {
        fault.get_or_insert(LineFault::UnmatchedQuote);
    }
    // parse_line() drops a trailing empty word.
    if !current.bytes.is_empty() || current.expands_environment {
        words.push(current);
    }
    if words.len() > MAX_WORDS {
        fault.get_or_insert(LineFault::TooManyWords);
    }
    (words, fault)
}

/// Two hex digits (`ishex()` on each: no sign, no space) as a byte.
fn hex(pair: Option<&[u8]>) -> Option<u8> {
    let pair = pair.filter(|p| p.len() == 2 && p.iter().all(u8::is_ascii_hexdigit))?;
    u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()
}

/// The lines of `after` that are not lines of `before` in the same place:
/// the whole lines around what lies between the two texts' common start and
/// common end, as a byte range of `after` and the number of its first line.
/// Text removed from within a line makes that line new too, so the line
/// holding the place of a removal is always among them. `None` only when
/// the texts are equal.
pub(crate) fn changed_lines(before: &[u8], after: &[u8]) -> Option<(Range<usize>, u32)> {
    if before == after {
        return None;
    }
    let common_start = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    let longest_end = before.len().min(after.len()) - common_start;
    let common_end = before
        .iter()
        .rev()
        .zip(after.iter().rev())
        .take(longest_end)
        .take_while(|(a, b)| a == b)
        .count();
    let changed_from = common_start;
    let changed_to = (after.len() - common_end).max(changed_from);
    let start = after[..changed_from]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |newline| newline + 1);
    let end = after[changed_to..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(after.len(), |newline| changed_to + newline);
    let first = 1 + after[..start].iter().filter(|b| **b == b'\n').count();
    Some((start..end, u32::try_from(first).unwrap_or(u32::MAX)))
}
