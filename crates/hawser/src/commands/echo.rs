//! `hawser echo`: the echo backend as a process.

use std::process::ExitCode;

use hawser_echo::{EchoConfig, EchoServer};

use crate::cli::EchoArgs;

pub async fn run(args: EchoArgs) -> anyhow::Result<ExitCode> {
    let mut config = EchoConfig::new(args.listen);
    config.namespace = args.namespace;
    config.pod = args.pod;
    config.service = args.service;
    config.ingress = args.ingress;
    let server = EchoServer::bind(config).await?;
    println!("echo listening on {}", server.local_addr());
    server.run(super::shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}
