//! `hawser certs`: the controller↔agent certificates, in a Secret-shaped directory
//! (`--store DIR`: one subdirectory per Secret, its keys as files) or in Kubernetes
//! Secrets (`--kubernetes [--namespace NS]`: compare-and-swap writes, so of two runs at
//! once the second stops, and its rerun resumes, instead of overwriting the first).

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use hawser_pki::{
    DirStore, KubeSecretStore, RenewRequest, SecretStore, Settings, StoreError, Written, check,
    renew_with,
};
use tokio::runtime::Runtime;

use super::UsageError;
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
            let opened = open(options)?;
            let report = check(opened.store.as_ref(), &settings(options), SystemTime::now())?;
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

/// The store the options name; a Kubernetes one brings the runtime its client runs on.
struct OpenStore {
    /// Declared first: dropped before the runtime that drives its connection.
    store: Box<dyn SecretStore>,
    _runtime: Option<Runtime>,
}

fn open(options: &CertsOptions) -> anyhow::Result<OpenStore> {
    match (&options.store.store, options.store.kubernetes) {
        (Some(_), false) if options.namespace.is_some() => Err(UsageError(anyhow::anyhow!(
            "--namespace applies to --kubernetes, not to --store"
        ))
        .into()),
        (Some(dir), false) => Ok(OpenStore {
            store: Box::new(DirStore::new(dir)),
            _runtime: None,
        }),
        (None, true) => {
            // The lifecycle is synchronous; the store blocks on this runtime, whose one
            // worker drives the API connection.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("hawser-certs-kube")
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            let store =
                KubeSecretStore::connect(options.namespace.as_deref(), runtime.handle().clone())
                    .map_err(|e| -> anyhow::Error {
                        match e {
                    // The client's message already carries its causes: print it once.
                    StoreError::Connect { source } => UsageError(anyhow::anyhow!(
                        "--kubernetes needs an in-cluster service account or a kubeconfig: {source}"
                    ))
                    .into(),
                    other => other.into(),
                }
                    })?;
            tracing::info!(
                namespace = store.namespace(),
                "certificates in kubernetes secrets"
            );
            Ok(OpenStore {
                store: Box::new(store),
                _runtime: Some(runtime),
            })
        }
        _ => Err(UsageError(anyhow::anyhow!(
            "exactly one of --store DIR or --kubernetes is required"
        ))
        .into()),
    }
}

fn renew(options: &CertsOptions, request: RenewRequest) -> anyhow::Result<ExitCode> {
    let opened = open(options)?;
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
        opened.store.as_ref(),
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
