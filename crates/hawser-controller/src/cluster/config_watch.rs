//! The HawserConfig, followed: each change of its spec is applied while the
//! controller runs, and its `Valid` condition says what came of it.
//!
//! ```text
//!  watch HawserConfig namespace/name ──spec changed──► apply(spec) ──Ok──► Valid=True
//!   (deleted: the defaults)                               │
//!                                                         └─Err─► Valid=False, the last
//!                                                                 good configuration stays
//! ```
//!
//! A spec that does not render never replaces one that does: the controller
//! keeps serving (and pushing) what it had, and the condition names why the
//! new one was refused.

use std::pin::Pin;

use ::kube::Client;
use ::kube::api::{Api, ApiResource, DynamicObject};
use ::kube::runtime::WatchStreamExt as _;
use ::kube::runtime::watcher::{self, Event, watcher};
use hawser_crd::{HawserConfig, HawserConfigSpec};
use tokio_stream::StreamExt as _;
use tracing::{info, warn};

use super::{Refusal, report_config};

/// What applying a spec comes to, once its tests (if any) have run.
pub type Applied = Pin<Box<dyn Future<Output = Result<(), Refusal>> + Send>>;

/// Follows HawserConfig `namespace/name` until `stop` resolves. `seen` is
/// the spec read at start; each different spec goes to `apply`, which puts
/// it in force or says why it cannot (once per spec: the echo of the status
/// write is not applied again).
pub async fn follow_config(
    client: Client,
    namespace: String,
    name: String,
    mut seen: HawserConfigSpec,
    mut apply: impl FnMut(HawserConfigSpec) -> Applied,
    stop: impl Future<Output = ()>,
) {
    let resource = ApiResource::erase::<HawserConfig>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher(api, config).default_backoff();
    let mut events = std::pin::pin!(events);
    let mut listed = false;
    let mut last_error: Option<String> = None;
    tokio::pin!(stop);
    loop {
        let event = tokio::select! {
            () = &mut stop => return,
            event = events.next() => match event {
                Some(event) => event,
                None => return,
            },
        };
        let spec = match event {
            Ok(Event::Init) => {
                listed = false;
                continue;
            }
            Ok(Event::InitApply(object) | Event::Apply(object)) => {
                listed = true;
                spec_of(&object)
            }
            // Deleted, or gone while the watch was down: the defaults.
            Ok(Event::Delete(_)) => Ok(HawserConfigSpec::default()),
            Ok(Event::InitDone) if !listed => Ok(HawserConfigSpec::default()),
            Ok(Event::InitDone) => continue,
            Err(error) => {
                let error = error.to_string();
                if last_error.as_ref() != Some(&error) {
                    warn!("HawserConfig {namespace}/{name}: {error}");
                }
                last_error = Some(error);
                continue;
            }
        };
        let verdict = match spec {
            Ok(spec) if spec == seen => continue,
            Ok(spec) => {
                let verdict = apply(spec.clone()).await;
                match &verdict {
                    Ok(()) => info!("HawserConfig {namespace}/{name} changed: applied"),
                    Err(refusal) => warn!(
                        "HawserConfig {namespace}/{name} changed but is refused, keeping the last valid one: {}",
                        refusal.message
                    ),
                }
                seen = spec;
                verdict
            }
            Err(e) => {
                warn!("HawserConfig {namespace}/{name}: {e}; keeping the last valid one");
                Err(Refusal::invalid_spec(e))
            }
        };
        if let Err(e) = report_config(client.clone(), &namespace, &name, &verdict).await {
            warn!("cannot write the HawserConfig status: {e}");
        }
    }
}

/// The spec of an untyped HawserConfig, or why it does not read: one
/// malformed object must not stall the watch.
fn spec_of(object: &DynamicObject) -> Result<HawserConfigSpec, String> {
    let spec = object.data.get("spec").cloned().unwrap_or_default();
    if spec.is_null() {
        return Ok(HawserConfigSpec::default());
    }
    serde_json::from_value(spec).map_err(|e| format!("spec: {e}"))
}
