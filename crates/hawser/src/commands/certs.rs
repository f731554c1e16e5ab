//! `hawser certs`: the controller↔agent certificates in a Secret-shaped
//! directory (one subdirectory per Secret, its keys as files).

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use hawser_pki::{DirStore, RenewRequest, Settings, Written, check, renew_with};

use crate::cli::{CertsArgs, CertsCommand, CertsOptions};

/// Fault-injection hook for the process tests, deliberately not a flag (and not in
/// `--help`): when set to a number of milliseconds, `bootstrap`/`renew` sleep that long
/// after each Secret is written, so a test can kill the run between two stages and
/// check that the next run resumes the same generation.
const PAUSE_AFTER_WRITE_ENV: &str = "HAWSER_CERTS_PAUSE_AFTER_WRITE_MS";

pub fn run(args: &CertsArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        CertsCommand::Bootstrap(options) => renew(options, RenewRequest::default()),
        CertsCommand::Renew(args) => renew(
            &args.options,
            RenewRequest {
                rotate_ca: args.rotate_ca,
            },
        ),
        CertsCommand::Check(options) => {
            let store = DirStore::new(&options.store);
            let report = check(&store, &settings(options), SystemTime::now())?;
            print!("{report}");
            if report.needs_attention() {
                eprintln!(
                    "a certificate expires within 30 days or cannot be read: run `hawser certs renew`"
                );
                Ok(ExitCode::FAILURE)
            } else {
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}

fn renew(options: &CertsOptions, request: RenewRequest) -> anyhow::Result<ExitCode> {
    let store = DirStore::new(&options.store);
    let pause = pause_after_write();
    // One line per Secret, flushed as soon as it is stored: what a killed run got done.
    let mut report = |written: &Written| {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(
            stdout,
            "wrote {} (generation {})",
            written.secret, written.generation
        );
        let _ = stdout.flush();
        if let Some(pause) = pause {
            std::thread::sleep(pause);
        }
    };
    let outcome = renew_with(
        &store,
        &settings(options),
        SystemTime::now(),
        request,
        &mut report,
    )?;
    if outcome.written.is_empty() {
        println!(
            "certificates are current (generation {}); nothing written",
            outcome.generation
        );
    } else {
        println!(
            "generation {}: wrote {}",
            outcome.generation,
            outcome.written.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn pause_after_write() -> Option<Duration> {
    let millis = std::env::var(PAUSE_AFTER_WRITE_ENV).ok()?;
    millis.trim().parse().ok().map(Duration::from_millis)
}

fn settings(options: &CertsOptions) -> Settings {
    Settings {
        issuer: options.issuer_secret.clone(),
        agent: options.agent_secret.clone(),
        controller: options.controller_secret.clone(),
        agent_name: options.agent_name.clone(),
        controller_name: options.controller_name.clone(),
        validity_days: options.validity_days,
    }
}
