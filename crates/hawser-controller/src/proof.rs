//! Validation tests proved against the real HAProxy: each test's request is
//! sent to a private HAProxy serving the render, and its answer compared
//! with what the test expects.
//!
//! ```text
//!  store ──render──► which Services the routes use, what the render rejects
//!    │                         │
//!    │                         ▼
//!    │               one echo backend per used Service (127.0.0.1, free port,
//!    │               answering with its own namespace/name)
//!    ▼                         │
//!  copy of the store whose EndpointSlices point those Services at their echoes
//!    │
//!    ▼ render with private settings (a 127.x address and free ports of its own,
//!    │ no sockets, no state file)
//!  temp dir ──► haproxy -db -dR -C <dir> -f haproxy.cfg ◄── each test's request (plain HTTP)
//!                                                      │
//!                        TestReport ◄── status + which Service answered, per test
//! ```
//!
//! Only the endpoints change between the render the tests see and the one
//! the user's store gives: routes, backends and every setting the templates
//! read other than addresses, ports and sockets stay as configured, so a
//! test proves the routing that would be served. Every used Service answers
//! through its echo, whatever its real endpoints: a test states which
//! Service answers, not whether its pods are up.
//!
//! A failed test lists the objects the render rejected that may explain it
//! (an Ingress for its host, its Service), since a test often fails because
//! the object it relies on was refused.
//!
//! Everything started here is stopped before [`run_validation_tests`]
//! returns, and killed if its future is dropped.

mod echoes;
mod private_haproxy;
mod probe;
mod rejections;
mod verdict;

use std::fmt;
use std::path::PathBuf;

use hawser_crd::ValidationTest;
use hawser_echo::EchoError;
use hawser_haproxy::HaproxyBinary;
use hawser_model::Store;
use hawser_render::{RenderConfig, RenderError, Renderer};

use crate::gate::GateError;
use echoes::EchoBackends;
use private_haproxy::PrivateHaproxy;

/// What came back for a test's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// `namespace/name` of the Service whose echo answered; `None` when
    /// HAProxy answered itself (no route, no server, an error).
    pub service: Option<String>,
}

/// How one test went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    pub name: String,
    /// `None` when the test passed.
    pub failure: Option<TestFailure>,
}

/// What a failed test expected and what came back instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFailure {
    /// E.g. `status 200 from Service app/web`.
    pub expected: String,
    /// E.g. `404 from HAProxy itself (no Service answered)`, or why no
    /// answer came.
    pub got: String,
    /// Objects the render rejected that may be why: Ingresses with a rule
    /// for the test's host (or for every host), the expected Service, any
    /// Service when HAProxy itself answered 503.
    pub rejected: Vec<String>,
}

/// Every test's outcome, in the order the tests were given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestReport {
    pub outcomes: Vec<TestOutcome>,
}

/// Why the tests could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ValidationTestError {
    #[error("cannot render the configuration under test: {0}")]
    Render(#[source] RenderError),
    #[error("cannot start the echo backend standing in for Service {service}: {source}")]
    Echo {
        service: String,
        #[source]
        source: EchoError,
    },
    #[error("cannot prepare HAProxy's test run: {0}")]
    Prepare(#[source] std::io::Error),
    #[error("cannot start HAProxy {}: {source}", path.display())]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The configuration check fails: the message names what is at fault.
    #[error(transparent)]
    Refused(GateError),
    /// HAProxy accepts the configuration but does not serve it.
    #[error("HAProxy does not start on the rendered configuration:\n{output}")]
    HaproxyFailed { output: String },
}

impl ValidationTestError {
    /// A stable category for metrics and condition reasons.
    pub fn metric_label(&self) -> &'static str {
        match self {
            ValidationTestError::Render(_) => "render",
            ValidationTestError::Echo { .. } | ValidationTestError::Prepare(_) => "setup",
            ValidationTestError::Refused(_) => "refused",
            ValidationTestError::Spawn { .. } | ValidationTestError::HaproxyFailed { .. } => {
                "haproxy"
            }
        }
    }
}

/// Renders `store` with `config`, serves it with a private `haproxy` and
/// echo backends, sends every test's request and reports each answer.
///
/// Tests run one after another, in order. An empty list starts nothing.
pub async fn run_validation_tests(
    config: &RenderConfig,
    store: &Store,
    tests: &[ValidationTest],
    haproxy: &HaproxyBinary,
) -> Result<TestReport, ValidationTestError> {
    if tests.is_empty() {
        return Ok(TestReport::default());
    }
    let survey = Renderer::new(config.clone())
        .and_then(|renderer| renderer.render(store))
        .map_err(ValidationTestError::Render)?;
    let rejected = rejections::rejections(&survey.diagnostics, store);
    let echoes = EchoBackends::start(store, &survey.plan).await?;
    let served = echoes.substitute(store);
    let server = PrivateHaproxy::start(haproxy, config, &served).await?;
    let mut outcomes = Vec::with_capacity(tests.len());
    for test in tests {
        let answer = probe::send(server.http(), &test.request).await;
        outcomes.push(verdict::judge(test, answer, &rejected));
    }
    server.stop().await;
    drop(echoes);
    Ok(TestReport { outcomes })
}

impl TestOutcome {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

impl TestReport {
    /// True when every test passed (and when there were none).
    pub fn passed(&self) -> bool {
        self.outcomes.iter().all(TestOutcome::passed)
    }

    pub fn failures(&self) -> impl Iterator<Item = &TestOutcome> {
        self.outcomes.iter().filter(|o| !o.passed())
    }

    /// The first failed test; its text (`test web failed: expected ...`)
    /// names it, for a status condition's message.
    pub fn first_failure(&self) -> Option<&TestOutcome> {
        self.failures().next()
    }

    /// `3 passed, 1 failed`.
    pub fn summary(&self) -> String {
        let failed = self.failures().count();
        format!("{} passed, {failed} failed", self.outcomes.len() - failed)
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.service {
            Some(service) => write!(f, "{} from Service {service}", self.status),
            None => write!(
                f,
                "{} from HAProxy itself (no Service answered)",
                self.status
            ),
        }
    }
}

impl fmt::Display for TestFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {}, got {}", self.expected, self.got)?;
        if !self.rejected.is_empty() {
            write!(f, "; the render rejected {}", self.rejected.join("; "))?;
        }
        Ok(())
    }
}

impl fmt::Display for TestOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            None => write!(f, "test {} passed", self.name),
            Some(failure) => write!(f, "test {} failed: {failure}", self.name),
        }
    }
}

#[cfg(test)]
mod tests;
