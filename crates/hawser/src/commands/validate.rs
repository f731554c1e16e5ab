//! `hawser validate`: render, then let the real HAProxy judge the result.
//! What HAProxy refuses because of one object is reported as that object's
//! quarantine (as `run` and the controller would serve the rest); what it
//! refuses for any other reason fails the whole configuration.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use hawser_controller::quarantine::{Judge, QuarantineError, render_checked};
use hawser_haproxy::HaproxyBinary;

use super::input;
use crate::cli::InputArgs;

pub async fn run(args: &InputArgs) -> anyhow::Result<ExitCode> {
    let inputs = input::load(args)?;
    let haproxy = HaproxyBinary::locate()?;
    let problems = inputs.manifests.problems.len();
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&warnings);
    let judge = Judge::gate_reporting(haproxy.clone(), inputs.policy.clone(), move |report| {
        if let Ok(mut kept) = kept.lock() {
            *kept = report.warnings;
        }
    });
    let checked = render_checked(
        &inputs.renderer,
        &inputs.manifests.store,
        None,
        &[],
        &judge,
        |_| false,
    )
    .await;
    let (rendered, haproxy_ok) = match checked {
        Ok(checked) => (checked.rendered, true),
        Err(QuarantineError::Render(e)) => return Err(e.into()),
        Err(refused) => {
            eprintln!("{refused}");
            (inputs.renderer.render(&inputs.manifests.store)?, false)
        }
    };
    if let Ok(warnings) = warnings.lock() {
        for warning in warnings.iter().filter(|_| haproxy_ok) {
            eprintln!("haproxy warning: {warning}");
        }
    }
    let rejected = input::report(&rendered);
    let summary = input::summary(&rendered);
    if haproxy_ok && rejected == 0 && problems == 0 {
        println!("valid: {summary}; HAProxy {} accepts it", haproxy.version());
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "invalid: {} manifest problems, {} rejected objects, {} ({summary})",
            problems,
            rejected,
            if haproxy_ok {
                format!("HAProxy {} accepts the rest", haproxy.version())
            } else {
                "the configuration check fails".to_string()
            },
        );
        Ok(ExitCode::FAILURE)
    }
}
