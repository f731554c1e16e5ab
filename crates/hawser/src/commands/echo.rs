//! `hawser echo`: the echo backend as a process.

use std::process::ExitCode;

use anyhow::Context;
use hawser_echo::{EchoConfig, EchoServer};

use crate::cli::EchoArgs;

pub async fn run(args: EchoArgs) -> anyhow::Result<ExitCode> {
    let mut config = EchoConfig::new(args.listen);
    config.namespace = args.namespace;
    config.pod = args.pod;
    config.service = args.service;
    config.ingress = args.ingress;
    let mut server = EchoServer::bind(config).await?;
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let read = |path: &std::path::Path| {
            std::fs::read(path).with_context(|| format!("failed to read {}", path.display()))
        };
        server = server.with_tls(hawser_echo::tls_config(&read(cert)?, &read(key)?)?);
    }
    println!("echo listening on {}", server.local_addr());
    server.run(super::shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}
