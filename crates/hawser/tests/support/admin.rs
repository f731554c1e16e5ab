//! The admin listener every hawser process serves (`hawser run`, `hawser
//! controller`, `hawser agent --admin`): its `/status` document, read once
//! or waited on, and its `/metrics`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::TIMEOUT;
use super::http;

/// The `/status` document; `output` is what the process printed, for the panic.
pub async fn status(admin: SocketAddr, output: impl Fn() -> String) -> Value {
    let response = http::http1_get(admin, "hawser", "/status")
        .await
        .unwrap_or_else(|e| panic!("GET /status: {e}\n{}", output()));
    serde_json::from_slice(&response.body).expect("/status is JSON")
}

/// Waits until `/status` satisfies `check`; returns it.
pub async fn wait_for_status(
    admin: SocketAddr,
    what: &str,
    output: impl Fn() -> String,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Ok(response) = http::http1_get(admin, "hawser", "/status").await
            && let Ok(status) = serde_json::from_slice::<Value>(&response.body)
        {
            if check(&status) {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "/status never showed {what}: {status:#}\n{}",
                output()
            );
        } else {
            assert!(
                Instant::now() < deadline,
                "/status never answered while waiting for {what}\n{}",
                output()
            );
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The value of one sample of `/metrics` (its name with labels, as printed).
pub async fn metric(admin: SocketAddr, sample: &str, output: impl Fn() -> String) -> Option<f64> {
    metrics(admin, output).await.lines().find_map(|line| {
        let (name, value) = line.rsplit_once(' ')?;
        (name == sample).then(|| value.parse().ok()).flatten()
    })
}

/// The sum of every sample of the metric `family` (`hawser_applies_total`:
/// the applies of every kind); 0 when it has none yet.
pub async fn metric_sum(admin: SocketAddr, family: &str, output: impl Fn() -> String) -> f64 {
    metrics(admin, output)
        .await
        .lines()
        .filter_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            let bare = name.split('{').next()?;
            (bare == family)
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

async fn metrics(admin: SocketAddr, output: impl Fn() -> String) -> String {
    let response = http::http1_get(admin, "hawser", "/metrics")
        .await
        .unwrap_or_else(|e| panic!("GET /metrics: {e}\n{}", output()));
    response.text()
}
