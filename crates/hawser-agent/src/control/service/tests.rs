#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

fn with_edit(edit: v1::BlobEdit) -> v1::ApplyRequest {
    v1::ApplyRequest {
        generation: 2,
        expected_generation: 1,
        plan_digest: edit.digest.clone(),
        edits: vec![edit],
        ..v1::ApplyRequest::default()
    }
}

#[test]
fn malformed_edits_are_refused_before_anything_is_looked_at() {
    let good = v1::BlobEdit {
        digest: "a".repeat(64),
        base: "b".repeat(64),
        kept_lines: 3,
        removed_lines: 1,
        inserted: b"line\n".to_vec(),
    };
    assert!(check_shape(&with_edit(good.clone())).is_ok());

    let not_a_digest = check_shape(&with_edit(v1::BlobEdit {
        base: "../held".into(),
        ..good.clone()
    }))
    .unwrap_err();
    assert_eq!(not_a_digest.code(), tonic::Code::InvalidArgument);
    assert!(
        not_a_digest.message().contains("not sha256 hex digests"),
        "{not_a_digest:?}"
    );

    let too_large = check_shape(&with_edit(v1::BlobEdit {
        inserted: vec![b'x'; MAX_FILE_BYTES + 1],
        ..good
    }))
    .unwrap_err();
    assert_eq!(too_large.code(), tonic::Code::InvalidArgument);
    assert!(
        too_large.message().contains("over the limit"),
        "{too_large:?}"
    );
}
