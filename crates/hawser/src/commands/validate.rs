//! `hawser validate`: render, then let the real HAProxy judge the result.

use std::process::ExitCode;

use hawser_controller::gate;
use hawser_haproxy::HaproxyBinary;

use super::input;
use crate::cli::InputArgs;

pub async fn run(args: &InputArgs) -> anyhow::Result<ExitCode> {
    let inputs = input::load(args)?;
    let haproxy = HaproxyBinary::locate()?;
    let rendered = inputs.renderer.render(&inputs.manifests.store)?;
    let rejected = input::report(&rendered);
    let problems = inputs.manifests.problems.len();
    let check = gate::check(&haproxy, &inputs.policy, &rendered.files).await;
    let haproxy_ok = match &check {
        Ok(report) => {
            for warning in &report.warnings {
                eprintln!("haproxy warning: {warning}");
            }
            true
        }
        Err(err) => {
            eprintln!("{err}");
            false
        }
    };
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
