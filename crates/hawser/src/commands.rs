//! One module per subcommand; this one dispatches and turns failures into
//! exit codes (64 for a bad configuration or arguments, 1 otherwise).

mod agent;
mod certs;
mod controller;
mod demo;
mod echo;
mod haproxy_stop;
mod input;
mod migrate;
mod render;
mod run;
mod status;
mod support_bundle;
mod tasks;
mod test;
mod validate;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Exit code for invalid configuration or arguments (sysexits' EX_USAGE).
const EXIT_USAGE: u8 = 64;

/// A failure the user fixes by changing arguments or configuration.
#[derive(Debug)]
pub struct UsageError(pub anyhow::Error);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for UsageError {}

pub fn run(cli: Cli) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Render(args) => render::run(&args),
        Command::Validate(args) => runtime.block_on(validate::run(&args)),
        Command::Status(args) => runtime.block_on(status::run(&args)),
        Command::Migrate(args) => runtime.block_on(migrate::run(&args)),
        Command::Test(args) => runtime.block_on(test::run(&args)),
        Command::Run(args) => runtime.block_on(run::run(&args)),
        Command::Demo(args) => runtime.block_on(demo::run(&args)),
        Command::Echo(args) => runtime.block_on(echo::run(args)),
        Command::Certs(args) => certs::run(&args),
        Command::Agent(args) => runtime.block_on(agent::run(&args)),
        Command::Controller(args) => runtime.block_on(controller::run(&args)),
        Command::SupportBundle(args) => runtime.block_on(support_bundle::run(&args)),
        Command::HaproxyStop(args) => runtime.block_on(haproxy_stop::run(&args)),
        Command::Crd => {
            print!("{}", hawser_crd::crd_yaml());
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
