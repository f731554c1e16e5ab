//! What an Ingress that is served asks of its routes beyond routing: its
//! features (annotations checked, Secrets they name read) and the TLS hosts
//! it passes through.

use hawser_model::{Ingress, ObjectKey, ObjectRef, Store};

use super::{Passthrough, Route, RouteTable};
use crate::config::Settings;
use crate::features::{self, Annotations, IngressFeatures, PlainFeatures};
use crate::report::Diagnostics;

/// The features an Ingress's annotations ask for, and its annotations in
/// hawser's dialect; `Err` refuses it (a bad value, or an annotation that
/// must not be served without). What is ignored or served otherwise than
/// its dialect's controller does is reported as a warning. `reads_secrets`
/// is set when they are read with Secrets of the store.
pub(super) fn served_features<'a>(
    ingress: &'a Ingress,
    store: &Store,
    settings: &Settings,
    object: &ObjectRef,
    reads_secrets: &mut bool,
    plain: &mut PlainFeatures,
    diags: &mut Diagnostics,
) -> Result<(IngressFeatures, Annotations<'a>), String> {
    let (mut features, read) = features::effective_features_with(ingress, settings, plain)?;
    let in_their_words = |message: String| read.in_their_words(message);
    *reads_secrets |= features.basic_auth.is_some()
        || features.client_auth.is_some()
        || read
            .map
            .contains_key(features::BACKEND_CA_SECRET_ANNOTATION);
    if let Some(auth) = &mut features.basic_auth {
        features::resolve_users(auth, store, &ingress.key.namespace)
            .map_err(|e| in_their_words(e.to_string()))?;
    }
    if let Some(client) = &mut features.client_auth {
        features::resolve_client_ca(client, store, &ingress.key.namespace)
            .map_err(|e| in_their_words(e.to_string()))?;
    }
    if let Some(name) = read.map.get(features::BACKEND_CA_SECRET_ANNOTATION) {
        // Read here so that a Secret missing or wrong refuses this Ingress,
        // not the Service its backends share (see `BackendKey::overrides`).
        let key = ObjectKey::new(&ingress.key.namespace, name.as_str());
        crate::tls::ca_file(store, &key).map_err(|why| {
            in_their_words(format!(
                "annotation {}: Secret {key}: {why}; the Ingress is refused rather than its pods spoken to unverified",
                features::BACKEND_CA_SECRET_ANNOTATION
            ))
        })?;
    }
    if let Some(auth) = &features.external_auth {
        features::check_namespace(
            auth,
            &ingress.key.namespace,
            &settings.auth_service_namespaces,
        )
        .map_err(|e| in_their_words(e.to_string()))?;
    }
    for warning in &read.warnings {
        diags.warn(object, warning.clone());
    }
    Ok((features, read))
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
