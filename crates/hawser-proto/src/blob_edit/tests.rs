#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

/// The edit of `base` into `next`, checked to make `next` again.
fn round_trip(base: &str, next: &str) -> Option<v1::BlobEdit> {
    let edit = edit_of(base.as_bytes(), next.as_bytes(), "next", "base")?;
    assert_eq!(
        String::from_utf8(apply(base.as_bytes(), &edit).unwrap()).unwrap(),
        next,
        "{edit:?}"
    );
    Some(edit)
}

fn map(hosts: &[&str]) -> String {
    hosts.iter().map(|h| format!("{h}/ be_{h}\n")).collect()
}

const HOSTS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

#[test]
fn a_line_added_travels_alone() {
    let base = map(&HOSTS);
    let mut next_hosts = HOSTS.to_vec();
    next_hosts.insert(3, "cc");
    let edit = round_trip(&base, &map(&next_hosts)).unwrap();
    assert_eq!(edit.kept_lines, 3);
    assert_eq!(edit.removed_lines, 0);
    assert_eq!(edit.inserted, b"cc/ be_cc\n");
}

#[test]
fn a_line_removed_or_changed_travels_as_the_span_it_touches() {
    let base = map(&HOSTS);
    let edit = round_trip(&base, &map(&["a", "b", "d", "e", "f", "g", "h"])).unwrap();
    assert_eq!((edit.kept_lines, edit.removed_lines), (2, 1));
    assert!(edit.inserted.is_empty());

    let changed = base.replace("e/ be_e", "e/ be_other");
    let edit = round_trip(&base, &changed).unwrap();
    assert_eq!((edit.kept_lines, edit.removed_lines), (4, 1));
    assert_eq!(edit.inserted, b"e/ be_other\n");
}

#[test]
fn lines_that_share_a_beginning_or_an_end_are_sent_whole() {
    // The changed line shares its first bytes with the line before and its
    // last ones with the line after: the edit still cuts at line ends.
    let base = "server s1 10.0.0.1:80\nserver s2 10.0.0.2:80\nserver s3 10.0.0.3:80\nbackend x\n";
    let next = "server s1 10.0.0.1:80\nserver s2 10.0.0.9:80\nserver s3 10.0.0.3:80\nbackend x\n";
    let edit = round_trip(base, next).unwrap();
    assert_eq!(edit.inserted, b"server s2 10.0.0.9:80\n");
    assert_eq!((edit.kept_lines, edit.removed_lines), (1, 1));
}

#[test]
fn a_last_line_without_a_newline_is_a_line() {
    round_trip("a\nb\nc\nd\ne\nf", "a\nb\nc\nd\ne\nf2").unwrap();
    round_trip("a\nb\nc\nd\ne\nf", "a\nb\nx\nc\nd\ne\nf").unwrap();
    round_trip("a\nb\nc\nd\ne\nf\n", "a\nb\nc\nd\ne\nf").unwrap();
    round_trip("a\nb\nc\nd\ne\nf", "a\nb\nc\nd\ne\nf\n").unwrap();
    round_trip("a\nb\nc\nd\ne\nf\n", "a\nb\nc\nd\ne\nf\ng\n").unwrap();
    round_trip("a\nb\nc\nd\ne\nf\n", "b\nc\nd\ne\nf\n").unwrap();
}

#[test]
fn an_edit_larger_than_half_is_no_edit() {
    assert_eq!(round_trip(&map(&HOSTS), &map(&["x", "y"])), None);
    assert_eq!(round_trip("", "a\n"), None);
}

#[test]
fn every_edit_between_small_texts_makes_its_text() {
    let texts = [
        "", "\n", "a", "a\n", "a\nb", "a\nb\n", "b\n", "a\na\n", "ab\n", "\n\n",
    ];
    for base in texts {
        for next in texts {
            let base = format!("{}{base}", map(&HOSTS));
            let next = format!("{}{next}", map(&HOSTS));
            round_trip(&base, &next);
            round_trip(
                &format!("{base}{}", map(&HOSTS)),
                &format!("{next}{}", map(&HOSTS)),
            );
        }
    }
}

#[test]
fn an_edit_beyond_its_base_is_refused() {
    let edit = v1::BlobEdit {
        digest: "next".into(),
        base: "base".into(),
        kept_lines: 2,
        removed_lines: 2,
        inserted: Vec::new(),
    };
    assert_eq!(
        apply(b"a\nb\nc\n", &edit),
        Err(BlobEditError::BeyondBase { wanted: 4, held: 3 })
    );
    let kept_only = v1::BlobEdit {
        kept_lines: u64::MAX,
        removed_lines: 1,
        ..edit
    };
    assert!(apply(b"a\n", &kept_only).is_err());
}
