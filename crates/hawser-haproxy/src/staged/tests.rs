#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn messages_name_the_line_and_its_culprit() {
    let rejected = StagedTreeError::Rejected {
        output: "[ALERT] bad".into(),
        file: Some("haproxy.cfg".into()),
        line: Some(3),
        culprit: Some("Service app/web port 80".into()),
    };
    assert_eq!(
        rejected.to_string(),
        "haproxy rejected the configuration at haproxy.cfg:3:\n[ALERT] bad\n\
         (at haproxy.cfg line 3, from Service app/web port 80)"
    );
    assert_eq!(rejected.metric_label(), "check_failed");
    let unrunnable = StagedTreeError::Unrunnable {
        error: CheckError::MissingChroot {
            line: 2,
            dir: "/nope".into(),
        },
        culprit: None,
    };
    assert_eq!(
        unrunnable.to_string(),
        "haproxy.cfg line 2: chroot directory \"/nope\" does not exist"
    );
    assert_eq!(unrunnable.metric_label(), "missing_chroot");
}
