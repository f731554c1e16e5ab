//! `hawser certs`: the controller↔agent certificates in a Secret-shaped
//! directory (one subdirectory per Secret, its keys as files).

use std::process::ExitCode;
use std::time::SystemTime;

use hawser_pki::{DirStore, Settings, check, renew};

use crate::cli::{CertsArgs, CertsCommand, CertsOptions};

pub fn run(args: &CertsArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        CertsCommand::Bootstrap(options) | CertsCommand::Renew(options) => {
            let store = DirStore::new(&options.store);
            let outcome = renew(&store, &settings(options), SystemTime::now())?;
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
