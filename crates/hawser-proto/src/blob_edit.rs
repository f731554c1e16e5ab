//! A blob sent as an edit of one the agent holds ([`v1::BlobEdit`]): a
//! route added to thousands changes one line of the route map, and a
//! server moved one line of haproxy.cfg, so the line that changed travels
//! instead of the whole file.
//!
//! ```text
//!  base:  line 1 … line k │ removed_lines lines │ rest
//!  next:  line 1 … line k │ inserted            │ rest
//! ```
//!
//! One hunk, between the lines both share at the start and at the end:
//! what a few scattered changes make is sent as the span between them,
//! which is still a fraction of a large file. The agent checks the result
//! against its digest, as it checks a whole blob.

use crate::v1;

/// Why an edit cannot be applied to its base.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BlobEditError {
    #[error("the edit keeps and removes {wanted} lines of a base of {held}")]
    BeyondBase { wanted: u64, held: u64 },
}

/// The edit that makes `next` from `base`, `None` when it would carry more
/// than half of `next` (the whole blob is then as good, and simpler).
pub fn edit_of(base: &[u8], next: &[u8], digest: &str, base_digest: &str) -> Option<v1::BlobEdit> {
    let shared_start = shared_lines_start(base, next);
    let (base_rest, next_rest) = (&base[shared_start..], &next[shared_start..]);
    let shared_end = shared_lines_end(base_rest, next_rest);
    let removed = &base_rest[..base_rest.len() - shared_end];
    let inserted = &next_rest[..next_rest.len() - shared_end];
    if inserted.len() > next.len() / 2 {
        return None;
    }
    Some(v1::BlobEdit {
        digest: digest.to_string(),
        base: base_digest.to_string(),
        kept_lines: lines(&base[..shared_start]),
        removed_lines: lines(removed),
        inserted: inserted.to_vec(),
    })
}

/// The content `edit` makes of `base`.
pub fn apply(base: &[u8], edit: &v1::BlobEdit) -> Result<Vec<u8>, BlobEditError> {
    let kept = line_offset(base, edit.kept_lines);
    let removed = kept
        .and_then(|start| line_offset(&base[start..], edit.removed_lines).map(|len| start + len));
    let (Some(kept), Some(removed)) = (kept, removed) else {
        return Err(BlobEditError::BeyondBase {
            wanted: edit.kept_lines.saturating_add(edit.removed_lines),
            held: lines(base),
        });
    };
    let mut next = Vec::with_capacity(base.len() - (removed - kept) + edit.inserted.len());
    next.extend_from_slice(&base[..kept]);
    next.extend_from_slice(&edit.inserted);
    next.extend_from_slice(&base[removed..]);
    Ok(next)
}

/// How many lines `text` holds: a line ends after a newline, or at the end.
fn lines(text: &[u8]) -> u64 {
    let ended = text.iter().filter(|&&b| b == b'\n').count() as u64;
    ended + u64::from(text.last().is_some_and(|&b| b != b'\n'))
}

/// Where the line after the first `count` lines of `text` begins; `None`
/// when `text` holds fewer.
fn line_offset(text: &[u8], count: u64) -> Option<usize> {
    let mut offset = 0;
    for _ in 0..count {
        if offset == text.len() {
            return None;
        }
        offset = match text[offset..].iter().position(|&b| b == b'\n') {
            Some(newline) => offset + newline + 1,
            None => text.len(),
        };
    }
    Some(offset)
}

/// The length of the whole lines `a` and `b` begin with alike.
fn shared_lines_start(a: &[u8], b: &[u8]) -> usize {
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if same == a.len() && same == b.len() {
        return same;
    }
    // Back to the end of the last line both hold whole.
    a[..same]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |newline| newline + 1)
}

/// The length of the whole lines `a` and `b` end with alike.
fn shared_lines_end(a: &[u8], b: &[u8]) -> usize {
    let same = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let starts_a_line = |text: &[u8]| same == text.len() || text[text.len() - same - 1] == b'\n';
    if starts_a_line(a) && starts_a_line(b) {
        return same;
    }
    // Forward to the first line of the shared tail that follows a newline
    // in both (the bytes before it are shared too).
    a[a.len() - same..]
        .iter()
        .position(|&byte| byte == b'\n')
        .map_or(0, |newline| same - newline - 1)
}

#[cfg(test)]
mod tests;
