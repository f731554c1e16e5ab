//! `hawser migrate --tests FILE`: a config file whose `tests:` prove, with
//! `hawser test` against the real HAProxy, that each host and path of the
//! Ingresses hawser would serve answers as it should: from its Service,
//! or with the redirect, 401 or 403 its annotations ask of a plain HTTP
//! request from 127.0.0.1 (the test client).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use hawser_model::{IngressBackend, PathType, Store};
use hawser_render::Settings;
use hawser_render::features::{IngressFeatures, effective_features, is_tls_host};

use super::{IngressReport, MigrateFrom};

/// The test client's address.
const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The config file: the settings the Ingresses need to be served as they
/// are (their class's controller, the dialect read), and the tests.
pub fn config_file(
    store: &Store,
    reports: &[IngressReport],
    settings: &Settings,
    from: Option<MigrateFrom>,
) -> anyhow::Result<String> {
    let mut tests = Vec::new();
    let mut names = BTreeSet::new();
    for ingress in store.ingresses() {
        let served = reports.iter().any(|r| {
            r.namespace == ingress.key.namespace
                && r.name == ingress.key.name
                && r.refused.is_none()
        });
        let Ok((features, _)) = effective_features(ingress, settings) else {
            continue;
        };
        if !served
            || features.use_regex
            || features.external_auth.is_some()
            || features.canary.is_some()
        {
            // Regex paths, external auth and a canary's share need requests
            // of their own.
            continue;
        }
        for rule in &ingress.rules {
            let host = match rule.host.as_deref() {
                None => "any-host.example".to_string(),
                Some(wild) if wild.starts_with("*.") => format!("test{}", &wild[1..]),
                Some(host) => host.to_string(),
            };
            for path in &rule.paths {
                let IngressBackend::Service { name, .. } = &path.backend else {
                    continue;
                };
                let target = match (path.path_type, path.path.as_deref()) {
                    (_, None | Some("")) => "/".to_string(),
                    (
                        PathType::ImplementationSpecific | PathType::Prefix | PathType::Exact,
                        Some(p),
                    ) => p.to_string(),
                };
                let service = format!("{}/{name}", ingress.key.namespace);
                let tls_host = is_tls_host(&host, ingress);
                let mut test_name = format!(
                    "{}/{} {host}{target}",
                    ingress.key.namespace, ingress.key.name
                );
                while !names.insert(test_name.clone()) {
                    test_name.push('\'');
                }
                tests.push(Case {
                    name: test_name,
                    request: Request {
                        host: host.clone(),
                        path: target.clone(),
                    },
                    expect: expectation(&features, tls_host, &target, service),
                });
            }
        }
    }
    let mut out = String::from(
        "# Written by hawser migrate: run `hawser test --manifests <dir> --config <this file>`\n\
         # before cutting over. Add your own settings; keep these.\n",
    );
    out.push_str("settings:\n");
    let controllers: BTreeSet<&str> = reports
        .iter()
        .filter_map(|r| r.controller.as_deref())
        .filter(|c| *c != settings.ingress_controller)
        .collect();
    let controller = match (controllers.len(), from) {
        (1, _) => controllers.first().map(|c| c.to_string()),
        (_, Some(from)) => Some(from.controller().to_string()),
        _ => None,
    };
    if let Some(controller) = controller {
        out.push_str(&format!("  ingressController: {controller}\n"));
    }
    if from.is_some() {
        let dialects: Vec<String> = settings
            .annotation_frontends
            .iter()
            .map(|d| {
                serde_json::to_string(d)
                    .unwrap_or_default()
                    .replace('"', "")
            })
            .collect();
        out.push_str(&format!(
            "  annotationFrontends: [{}]\n",
            dialects.join(", ")
        ));
    }
    #[derive(serde::Serialize)]
    struct Tests<'a> {
        tests: &'a [Case],
    }
    out.push_str(&serde_saphyr::to_string(&Tests { tests: &tests })?);
    Ok(out)
}

/// One `hawser test` case, as the config file writes it.
#[derive(serde::Serialize)]
struct Case {
    name: String,
    request: Request,
    expect: Expect,
}

#[derive(serde::Serialize)]
struct Request {
    host: String,
    path: String,
}

#[derive(serde::Serialize)]
struct Expect {
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<String>,
}

/// What a plain HTTP request from [`CLIENT`] for `target` gets.
fn expectation(
    features: &IngressFeatures,
    tls_host: bool,
    target: &str,
    service: String,
) -> Expect {
    let status = |code: u16| Expect {
        status: code,
        service: None,
    };
    let outside = !features.allow.is_empty() && !features.allow.iter().any(|n| n.contains(CLIENT));
    let inside = features.deny.iter().any(|n| n.contains(CLIENT));
    if outside || inside {
        return status(403);
    }
    if features.basic_auth.is_some() {
        return status(401);
    }
    if tls_host && let Some(code) = features.https_redirect {
        return status(code);
    }
    if let Some(client) = &features.client_auth
        && client.required
        && tls_host
    {
        return status(400);
    }
    if let Some(redirect) = &features.redirect {
        return status(redirect.code);
    }
    if features.app_root.is_some() && target == "/" {
        return status(302);
    }
    Expect {
        status: 200,
        service: Some(service),
    }
}
