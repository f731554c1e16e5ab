//! The generated default certificate, shared by every controller replica
//! through a Secret: a failover must push the same `certs/default.pem`, not
//! a new one (which would change every agent's files for nothing).

use std::collections::BTreeMap;

use ::kube::Api;
use ::kube::Client;
use ::kube::api::PostParams;
use hawser_render::{CertificatePem, generate_default_certificate};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tracing::info;

/// Reads the default certificate from Secret `namespace/name`, creating it
/// (with a new self-signed certificate) when it does not exist. When two
/// replicas create it at once, the one that loses reads the winner's.
pub async fn shared_default_certificate(
    client: Client,
    namespace: &str,
    name: &str,
) -> Result<CertificatePem, String> {
    let secrets: Api<Secret> = Api::namespaced(client, namespace);
    for _ in 0..3 {
        if let Some(secret) = secrets
            .get_opt(name)
            .await
            .map_err(|e| format!("cannot read Secret {namespace}/{name}: {e}"))?
        {
            return from_secret(&secret).map_err(|e| {
                format!("Secret {namespace}/{name} holds no usable certificate ({e}); delete it to have a new one made")
            });
        }
        let generated = generate_default_certificate()?;
        let (crt, key) = split_pem(generated.as_bytes());
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                labels: Some(BTreeMap::from([(
                    "app.kubernetes.io/managed-by".to_string(),
                    "hawser".to_string(),
                )])),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/tls".to_string()),
            data: Some(BTreeMap::from([
                ("tls.crt".to_string(), ByteString(crt)),
                ("tls.key".to_string(), ByteString(key)),
            ])),
            ..Secret::default()
        };
        match secrets.create(&PostParams::default(), &secret).await {
            Ok(_) => {
                info!("default certificate generated into Secret {namespace}/{name}");
                return Ok(generated);
            }
            // Another replica made it first: read theirs.
            Err(::kube::Error::Api(status)) if status.code == 409 => {}
            Err(e) => return Err(format!("cannot create Secret {namespace}/{name}: {e}")),
        }
    }
    Err(format!(
        "Secret {namespace}/{name} keeps changing; giving up"
    ))
}

fn from_secret(secret: &Secret) -> Result<CertificatePem, String> {
    let data = secret.data.as_ref().ok_or("no data")?;
    let crt = data.get("tls.crt").ok_or("no tls.crt")?;
    let key = data.get("tls.key").ok_or("no tls.key")?;
    CertificatePem::from_parts(&crt.0, &key.0)
}

/// Certificates and key of one PEM bundle, apart.
fn split_pem(pem: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let text = String::from_utf8_lossy(pem);
    let (mut crt, mut key) = (String::new(), String::new());
    let mut in_key = false;
    for line in text.lines() {
        if line.starts_with("-----BEGIN") {
            in_key = line.contains("PRIVATE KEY");
        }
        let out = if in_key { &mut key } else { &mut crt };
        out.push_str(line);
        out.push('\n');
    }
    (crt.into_bytes(), key.into_bytes())
}
