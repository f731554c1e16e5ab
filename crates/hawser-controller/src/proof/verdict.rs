//! Comparing an answer with what a test expects, in words a user can act on.

use hawser_crd::{TestExpectation, ValidationTest};

use super::rejections::Rejection;
use super::{Answer, TestFailure, TestOutcome};

/// How many rejected objects a failure lists before `and N more`.
const REJECTED_SHOWN: usize = 3;

/// The outcome of `test`, given what its request got (or why it got
/// nothing) and the objects the render rejected; a failure names those
/// that may explain it.
pub(super) fn judge(
    test: &ValidationTest,
    answer: Result<Answer, String>,
    rejected: &[Rejection],
) -> TestOutcome {
    let got = match &answer {
        Ok(answer) if meets(&test.expect, answer) => None,
        Ok(answer) => Some(answer.to_string()),
        Err(reason) => Some(format!("no answer: {reason}")),
    };
    let failure = got.map(|got| {
        let relevant: Vec<&str> = rejected
            .iter()
            .filter(|r| r.may_explain(test, &answer))
            .map(|r| r.text.as_str())
            .collect();
        TestFailure {
            expected: expected(&test.expect),
            got,
            rejected: shown(&relevant),
        }
    });
    TestOutcome {
        name: test.name.clone(),
        failure,
    }
}

fn meets(expect: &TestExpectation, answer: &Answer) -> bool {
    let status_ok = expect.status.is_none_or(|status| status == answer.status);
    let service_ok = expect
        .service
        .as_ref()
        .is_none_or(|service| answer.service.as_ref() == Some(service));
    status_ok && service_ok
}

/// `status 200 from Service app/web`, `status 404`, `an answer from Service app/web`.
fn expected(expect: &TestExpectation) -> String {
    match (expect.status, &expect.service) {
        (Some(status), Some(service)) => format!("status {status} from Service {service}"),
        (Some(status), None) => format!("status {status}"),
        (None, Some(service)) => format!("an answer from Service {service}"),
        (None, None) => "anything".to_string(),
    }
}

fn shown(rejected: &[&str]) -> Vec<String> {
    let mut shown: Vec<String> = rejected
        .iter()
        .take(REJECTED_SHOWN)
        .map(|r| r.to_string())
        .collect();
    if rejected.len() > REJECTED_SHOWN {
        shown.push(format!(
            "and {} more rejected objects",
            rejected.len() - REJECTED_SHOWN
        ));
    }
    shown
}
