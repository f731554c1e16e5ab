//! `hawser test`: prove the config's validation tests against the real
//! HAProxy serving the render of a manifests directory.

use std::process::ExitCode;

use hawser_controller::{ConfigFile, run_validation_tests};
use hawser_crd::ValidationTest;
use hawser_haproxy::HaproxyBinary;

use super::{UsageError, input};
use crate::cli::TestArgs;

pub async fn run(args: &TestArgs) -> anyhow::Result<ExitCode> {
    let config = match &args.input.config {
        Some(path) => input::read_config_file(path)?,
        None => ConfigFile::default(),
    };
    let tests = select(&config.tests, &args.tests)?;
    if tests.is_empty() {
        println!(
            "no validation tests: add a `tests:` list to the --config file (see `hawser test --help`)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let inputs = input::load_with(&args.input.manifests, config.render.clone())?;
    let haproxy = HaproxyBinary::locate()?;
    let report =
        run_validation_tests(&config.render, &inputs.manifests.store, &tests, &haproxy).await?;
    for outcome in &report.outcomes {
        match &outcome.failure {
            None => println!("PASS {}", outcome.name),
            Some(failure) => println!("FAIL {}: {failure}", outcome.name),
        }
    }
    println!("{} (HAProxy {})", report.summary(), haproxy.version());
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The tests named with `--test`, in the config's order; all when none is named.
fn select(tests: &[ValidationTest], names: &[String]) -> anyhow::Result<Vec<ValidationTest>> {
    if names.is_empty() {
        return Ok(tests.to_vec());
    }
    if let Some(unknown) = names.iter().find(|n| !tests.iter().any(|t| &t.name == *n)) {
        let known: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
        let known = if known.is_empty() {
            "the config has no tests".to_string()
        } else {
            format!("the config's tests are: {}", known.join(", "))
        };
        return Err(
            UsageError(anyhow::anyhow!("--test {unknown:?}: no such test; {known}")).into(),
        );
    }
    Ok(tests
        .iter()
        .filter(|t| names.contains(&t.name))
        .cloned()
        .collect())
}
