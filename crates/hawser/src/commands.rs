//! One module per subcommand; this one dispatches (the long-lived ones as a
//! task on the runtime's worker threads, see `on_workers`) and turns
//! failures into exit codes (64 for a bad configuration or arguments, 1
//! otherwise).

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

use std::future::Future;
use std::process::ExitCode;

use tokio::runtime::Runtime;

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
        Command::Run(args) => on_workers(&runtime, async move { run::run(&args).await }),
        Command::Demo(args) => on_workers(&runtime, async move { demo::run(&args).await }),
        Command::Echo(args) => runtime.block_on(echo::run(args)),
        Command::Certs(args) => certs::run(&args),
        Command::Agent(args) => on_workers(&runtime, async move { agent::run(&args).await }),
        Command::Controller(args) => {
            on_workers(&runtime, async move { controller::run(&args).await })
        }
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

/// Runs a long-lived command as a task on the runtime's worker threads.
///
/// A future the main thread blocks on runs on the main thread, beside the
/// two workers: each hand-off between it and the tasks it feeds (a watch
/// event to the render loop, a render to the pushes or to the agent) then
/// wakes another thread, which on CPUs busy with traffic waited about a
/// millisecond in the run queue each time. A task on a worker that wakes
/// another runs it next on the same thread, once it awaits.
fn on_workers<F>(runtime: &Runtime, command: F) -> anyhow::Result<ExitCode>
where
    F: Future<Output = anyhow::Result<ExitCode>> + Send + 'static,
{
    match runtime.block_on(runtime.spawn(command)) {
        Ok(result) => result,
        // As if it had run on the main thread.
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(error) => Err(anyhow::anyhow!("the command stopped: {error}")),
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::thread::ThreadId;

    use super::*;

    fn runtime() -> Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn a_long_lived_command_runs_on_a_worker_thread() {
        let ran_on: Arc<Mutex<Option<ThreadId>>> = Arc::default();
        let record = Arc::clone(&ran_on);
        let code = on_workers(&runtime(), async move {
            *record.lock().expect("not poisoned") = Some(std::thread::current().id());
            Ok(ExitCode::from(3))
        })
        .expect("the command's result");
        assert_eq!(code, ExitCode::from(3));
        let ran_on = ran_on.lock().expect("not poisoned").expect("it ran");
        assert_ne!(ran_on, std::thread::current().id());
    }

    #[test]
    fn a_commands_panic_is_its_callers() {
        let runtime = runtime();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            on_workers(&runtime, async { panic!("the command broke") })
        }));
        let payload = unwound.expect_err("the panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"the command broke"));
    }
}
