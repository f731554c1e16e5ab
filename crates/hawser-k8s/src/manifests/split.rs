//! Splitting a YAML stream into its documents, line by line, before parsing.
//!
//! Parsing a whole file at once would let one syntax error hide every later
//! document (the parser cannot resynchronise). YAML forbids a line that starts
//! with `---` or `...` followed by a space, a tab or the line's end inside a
//! document's content (YAML 1.2, "c-forbidden"), so such a line always separates
//! documents and the split below never cuts a document in two, even inside block
//! or quoted scalars.

/// One document's text, a slice of the file's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Chunk<'a> {
    pub text: &'a str,
    /// The file line (1-based) on which `text` begins.
    pub first_line: u64,
}

impl Chunk<'_> {
    /// Turns a line reported by the parser for this chunk (1-based) into a file line.
    pub fn file_line(&self, chunk_line: u64) -> u64 {
        self.first_line + chunk_line.saturating_sub(1)
    }
}

/// Splits `text` at document markers.
///
/// A `---` line starts a new chunk unless the current one holds nothing but
/// comments, blank lines and directives (which belong to the document that the
/// marker opens). A `...` line ends the current chunk. Chunks that hold no
/// document at all are returned too; the parser reads them as empty.
pub(super) fn split_documents(text: &str) -> Vec<Chunk<'_>> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut start_line = 1;
    // Whether the current chunk already has a `---` or content of its own.
    let mut has_body = false;
    let mut offset = 0;
    for (line_no, line) in (1u64..).zip(text.split_inclusive('\n')) {
        let content = line.trim_end_matches(['\n', '\r']);
        let end = offset + line.len();
        if is_marker(content, "---") {
            if has_body {
                chunks.push(Chunk {
                    text: &text[start..offset],
                    first_line: start_line,
                });
                start = offset;
                start_line = line_no;
            }
            has_body = true;
        } else if is_marker(content, "...") {
            chunks.push(Chunk {
                text: &text[start..end],
                first_line: start_line,
            });
            start = end;
            start_line = line_no + 1;
            has_body = false;
        } else if !is_prelude(content) {
            has_body = true;
        }
        offset = end;
    }
    if start < text.len() {
        chunks.push(Chunk {
            text: &text[start..],
            first_line: start_line,
        });
    }
    chunks
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// Blank lines, comments and directives: what may come before a `---`.
fn is_prelude(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.is_empty() || trimmed.starts_with('#') || line.starts_with('%')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<(u64, &str)> {
        split_documents(text)
            .into_iter()
            .map(|c| (c.first_line, c.text))
            .collect()
    }

    #[test]
    fn splits_on_markers_and_keeps_file_lines() {
        let text = "a: 1\n---\nb: 2\n--- # second\nc: 3\n";
        assert_eq!(
            split(text),
            vec![
                (1, "a: 1\n"),
                (2, "---\nb: 2\n"),
                (4, "--- # second\nc: 3\n")
            ]
        );
    }

    #[test]
    fn leading_comments_and_directives_stay_with_their_document() {
        let text = "# header\n%YAML 1.2\n---\na: 1\n...\n# next\n---\nb: 2\n";
        assert_eq!(
            split(text),
            vec![
                (1, "# header\n%YAML 1.2\n---\na: 1\n...\n"),
                (6, "# next\n---\nb: 2\n")
            ]
        );
    }

    #[test]
    fn markers_inside_content_do_not_split() {
        // Indented, or followed by other characters: not markers.
        let text = "a: |\n  ---\n  text\nb: ---x\n----\n";
        assert_eq!(split(text), vec![(1, text)]);
    }

    #[test]
    fn crlf_and_a_missing_final_newline() {
        let text = "a: 1\r\n---\r\nb: 2";
        assert_eq!(split(text), vec![(1, "a: 1\r\n"), (2, "---\r\nb: 2")]);
    }

    #[test]
    fn chunk_lines_map_to_file_lines() {
        let chunk = Chunk {
            text: "",
            first_line: 10,
        };
        assert_eq!(chunk.file_line(1), 10);
        assert_eq!(chunk.file_line(3), 12);
    }
}
