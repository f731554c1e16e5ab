//! `hawser migrate`: what becomes of each Ingress moved to hawser from
//! ingress-nginx or haproxytech's controller, annotation by annotation,
//! before anything is cut over.
//!
//! ```text
//!  --manifests DIR | --kubernetes ──► Store, every Ingress given a class of hawser's ──render──► refused / served
//!                        └─ each Ingress's and Service's annotations ──explain──► served / differs / ignored / lost / refused
//!  --tests FILE ◄── one `hawser test` case per host and path (cases.rs)
//! ```
//!
//! Exits 1 when an Ingress would be refused or would lose access control
//! (an annotation about it dropped under `foreignAnnotations`), 0
//! otherwise, 64 for bad arguments.

mod cases;
mod report;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use hawser_model::{Ingress, IngressClass, Kind, Object, ObjectRef, Store};
use hawser_render::features::{Dialect, Target, Verdict, explain};
use hawser_render::{RenderConfig, Renderer, Severity};

use super::{UsageError, input};
use crate::cli::{MigrateArgs, MigrateFrom, StatusOutput};

/// The class every Ingress is given for the render: one of hawser's.
const MIGRATE_CLASS: &str = "hawser-migrate";

/// What becomes of one Ingress.
#[derive(Debug, serde::Serialize)]
pub struct IngressReport {
    pub namespace: String,
    pub name: String,
    /// Its class as written, and the controller of that class, if known.
    pub class: Option<String>,
    pub controller: Option<String>,
    /// `None`: served; else why it is refused.
    pub refused: Option<String>,
    /// Each annotation any dialect reads, and its verdict.
    pub annotations: BTreeMap<String, Verdict>,
}

/// What becomes of one Service's annotations (haproxytech reads some there).
#[derive(Debug, serde::Serialize)]
pub struct ServiceReport {
    pub namespace: String,
    pub name: String,
    /// `None`: served; else why it is refused (its backends answer 503).
    pub refused: Option<String>,
    pub annotations: BTreeMap<String, Verdict>,
}

pub async fn run(args: &MigrateArgs) -> anyhow::Result<ExitCode> {
    let mut config = match &args.config {
        Some(path) => input::read_config(path)?,
        None => RenderConfig::default(),
    };
    if let Some(from) = args.from {
        config.settings.annotation_frontends = vec![Dialect::Hawser, from.dialect()];
    }
    let settings = config.settings.clone();
    let renderer = Renderer::new(config).map_err(|e| UsageError(e.into()))?;
    let original = &read_objects(args).await?;
    let store = with_hawser_class(original, &settings.ingress_controller);
    let rendered = renderer.render(&store)?;
    let refusals: BTreeMap<ObjectRef, String> = rendered
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Rejected)
        .map(|d| (d.object.clone(), d.message.clone()))
        .collect();
    let ingresses: Vec<IngressReport> = original
        .ingresses()
        .map(|ingress| {
            let class = ingress.requested_class().map(str::to_string);
            let controller = class.as_deref().and_then(|name| {
                original
                    .ingress_classes()
                    .find(|c| c.name == name)
                    .map(|c| c.controller.clone())
            });
            let object = ObjectRef::new(Kind::Ingress, ingress.key.clone());
            IngressReport {
                namespace: ingress.key.namespace.clone(),
                name: ingress.key.name.clone(),
                class,
                controller,
                refused: refusals.get(&object).cloned(),
                annotations: read_ones(explain(
                    &ingress.annotations,
                    Target::Ingress,
                    &ingress.key.namespace,
                    &settings,
                )),
            }
        })
        .collect();
    let services: Vec<ServiceReport> = original
        .services()
        .filter_map(|service| {
            let annotations = read_ones(explain(
                &service.annotations,
                Target::Service,
                &service.key.namespace,
                &settings,
            ));
            let foreign = annotations
                .keys()
                .any(|k| !k.starts_with(hawser_render::features::ANNOTATION_PREFIX));
            let object = ObjectRef::new(Kind::Service, service.key.clone());
            // Refused by the render when a route uses it, by its
            // annotations whether or not one does.
            let refused = refusals.get(&object).cloned().or_else(|| {
                annotations.values().find_map(|v| match v {
                    Verdict::Refused(why) => Some(why.clone()),
                    _ => None,
                })
            });
            foreign.then(|| ServiceReport {
                namespace: service.key.namespace.clone(),
                name: service.key.name.clone(),
                refused,
                annotations,
            })
        })
        .collect();

    if let Some(path) = &args.tests {
        let file = cases::config_file(&store, &ingresses, &settings, args.from)?;
        std::fs::write(path, file)
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(UsageError)?;
    }
    let out = match args.output {
        StatusOutput::Text => report::text(&ingresses, &services, &settings),
        StatusOutput::Json => format!(
            "{:#}\n",
            serde_json::json!({ "ingresses": ingresses, "services": services })
        ),
    };
    if let Err(e) = std::io::stdout().lock().write_all(out.as_bytes())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(anyhow::Error::new(e).context("cannot write the migration report"));
    }
    let lost = |verdicts: &BTreeMap<String, Verdict>| {
        verdicts.values().any(|v| matches!(v, Verdict::Lost))
    };
    let blocked = ingresses
        .iter()
        .any(|i| i.refused.is_some() || lost(&i.annotations))
        || services
            .iter()
            .any(|s| s.refused.is_some() || lost(&s.annotations));
    Ok(if blocked {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// How long `--kubernetes` waits for the cluster to list.
const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The objects to judge: the manifests, or the cluster.
async fn read_objects(args: &MigrateArgs) -> anyhow::Result<Store> {
    if let Some(dir) = &args.manifests {
        return Ok(input::read_manifests(dir)?.store);
    }
    let client = kube::Client::try_default().await.map_err(|e| {
        UsageError(anyhow::anyhow!(
            "--kubernetes needs an in-cluster service account or a kubeconfig: {e}"
        ))
    })?;
    let options = hawser_controller::cluster::KubeSourceOptions {
        namespaces: args.namespaces.clone(),
        ..Default::default()
    };
    let (store, problems) = hawser_controller::cluster::snapshot(&client, &options, LIST_TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    for problem in &problems {
        eprintln!("object problem: {problem}");
    }
    Ok(store)
}

/// The annotations some dialect reads (not `kubectl`'s and the like).
fn read_ones(verdicts: BTreeMap<String, Verdict>) -> BTreeMap<String, Verdict> {
    verdicts
        .into_iter()
        .filter(|(_, v)| *v != Verdict::NotRead)
        .collect()
}

/// `store` with every Ingress given a class hawser serves, as if cut over.
fn with_hawser_class(store: &Store, controller: &str) -> Store {
    let mut moved = store.clone();
    moved.insert(Object::IngressClass(IngressClass {
        name: MIGRATE_CLASS.to_string(),
        controller: controller.to_string(),
        is_default: false,
    }));
    let ingresses: Vec<Ingress> = store.ingresses().cloned().collect();
    for mut ingress in ingresses {
        ingress.class_name = Some(MIGRATE_CLASS.to_string());
        moved.insert(Object::Ingress(ingress));
    }
    moved
}

impl MigrateFrom {
    fn dialect(self) -> Dialect {
        match self {
            MigrateFrom::Nginx => Dialect::Nginx,
            MigrateFrom::Haproxytech => Dialect::Haproxytech,
        }
    }

    /// The controller its IngressClasses name.
    pub fn controller(self) -> &'static str {
        match self {
            MigrateFrom::Nginx => "k8s.io/ingress-nginx",
            MigrateFrom::Haproxytech => "haproxy.org/ingress-controller/haproxy",
        }
    }
}
