//! What an Ingress that is served asks of its routes beyond routing: its
//! features (annotations checked, Secrets they name read) and the TLS hosts
//! it passes through.

use hawser_model::{Ingress, ObjectKey, ObjectRef, Store};

use super::{Passthrough, Route, RouteTable};
use crate::config::Settings;
use crate::features::{self, IngressFeatures};
use crate::report::Diagnostics;

/// The features an Ingress's annotations ask for; `Err` refuses it (a bad
/// `hawser.dev/` value, or another dialect's annotation that must not be
/// served without). Ignored foreign annotations are reported as warnings.
pub(super) fn served_features(
    ingress: &Ingress,
    store: &Store,
    settings: &Settings,
    object: &ObjectRef,
    diags: &mut Diagnostics,
) -> Result<IngressFeatures, String> {
    let ignored =
        features::foreign_annotations(&ingress.annotations, settings.foreign_annotations)?;
    let mut features =
        features::effective_features(ingress, settings).map_err(|e| e.to_string())?;
    if let Some(auth) = &mut features.basic_auth {
        features::resolve_users(auth, store, &ingress.key.namespace).map_err(|e| e.to_string())?;
    }
    if let Some(client) = &mut features.client_auth {
        features::resolve_client_ca(client, store, &ingress.key.namespace)
            .map_err(|e| e.to_string())?;
    }
    if let Some(name) = ingress
        .annotations
        .get(features::BACKEND_CA_SECRET_ANNOTATION)
    {
        // Read here so that a Secret missing or wrong refuses this Ingress,
        // not the Service its backends share (see `BackendKey::overrides`).
        let key = ObjectKey::new(&ingress.key.namespace, name.as_str());
        crate::tls::ca_file(store, &key).map_err(|why| {
            format!(
                "annotation {}: Secret {key}: {why}; the Ingress is refused rather than its pods spoken to unverified",
                features::BACKEND_CA_SECRET_ANNOTATION
            )
        })?;
    }
    if let Some(auth) = &features.external_auth {
        features::check_namespace(
            auth,
            &ingress.key.namespace,
            &settings.auth_service_namespaces,
        )
        .map_err(|e| e.to_string())?;
    }
    for warning in ignored {
        diags.warn(object, warning);
    }
    Ok(features)
}

/// Each TLS host of a passthrough Ingress goes whole, by SNI, to the backend
/// of its rule's first path (ingress-nginx's rule); the first Ingress to
/// claim a host keeps it.
pub(super) fn add_passthrough(
    table: &mut RouteTable,
    ingress: &Ingress,
    routes: &[Route],
    object: &ObjectRef,
    diags: &mut Diagnostics,
) {
    for route in routes.iter().filter(|r| r.tls_host) {
        if table.passthrough.iter().any(|p| p.host == route.host) {
            if !table
                .passthrough
                .iter()
                .any(|p| p.host == route.host && p.ingress == ingress.key)
            {
                diags.warn(
                    object,
                    format!(
                        "host {:?} is passed through by an older Ingress already",
                        route.host
                    ),
                );
            }
            continue;
        }
        table.passthrough.push(Passthrough {
            ingress: ingress.key.clone(),
            host: route.host.clone(),
            backend: route.backend.clone(),
        });
    }
}
