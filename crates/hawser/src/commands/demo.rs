pub async fn run(_args: &crate::cli::DemoArgs) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("demo: not yet")
}
