//! The `hawser` binary: parses the command line and hands over to a command.

mod admin;
mod cli;
mod commands;
mod metrics;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_env("HAWSER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(cli.default_log_level()));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // HAWSER_LOG_FORMAT=json: one JSON object a line, for log collectors.
    if std::env::var("HAWSER_LOG_FORMAT").is_ok_and(|f| f == "json") {
        logs.json().init();
    } else {
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    commands::run(cli)
}
