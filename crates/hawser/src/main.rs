//! The `hawser` binary: parses the command line and hands over to a command.

mod admin;
mod cli;
mod commands;
mod logs;
mod metrics;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // Written out when `main` returns.
    let _log = logs::init(cli.default_log_level());
    commands::run(cli)
}
