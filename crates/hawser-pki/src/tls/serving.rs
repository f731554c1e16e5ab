//! A plain serving certificate (the admission webhook's), re-read when its
//! files change: no client authentication, no role checks — whoever issued
//! it (cert-manager, an operator) is trusted by the API server, not by us.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustls::ServerConfig;
use rustls::crypto::ring::default_provider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tracing::warn;

use super::files;
use super::material::{certificates, certified_key};

/// How long a loaded certificate is used before the files are looked at again.
const RECHECK: Duration = Duration::from_secs(30);

/// TLS 1.2 and 1.3 (what API servers speak), HTTP/1.1 and h2, serving
/// `dir/tls.crt` with `dir/tls.key`.
pub fn serving_config(dir: impl Into<PathBuf>) -> Result<Arc<ServerConfig>, String> {
    let resolver = Arc::new(ServingCert {
        dir: dir.into(),
        loaded: Mutex::new(None),
    });
    // Fail at start when the files are unusable, not at the first handshake.
    resolver.current().ok_or_else(|| {
        format!(
            "{}: tls.crt and tls.key are missing or unusable",
            resolver.dir.display()
        )
    })?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[derive(Debug)]
struct ServingCert {
    dir: PathBuf,
    loaded: Mutex<Option<(Instant, Arc<CertifiedKey>)>>,
}

impl ServingCert {
    fn current(&self) -> Option<Arc<CertifiedKey>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, key)) = loaded.as_ref()
            && at.elapsed() < RECHECK
        {
            return Some(Arc::clone(key));
        }
        match load(&self.dir) {
            Ok(key) => {
                let key = Arc::new(key);
                *loaded = Some((Instant::now(), Arc::clone(&key)));
                Some(key)
            }
            Err(e) => {
                warn!(dir = %self.dir.display(), "serving certificate not reloaded: {e}");
                // Keep serving the last good one.
                loaded.as_mut().map(|(at, key)| {
                    *at = Instant::now();
                    Arc::clone(key)
                })
            }
        }
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

fn load(dir: &Path) -> Result<CertifiedKey, String> {
    let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| format!("{name}: {e}"));
    let crt_path = dir.join(files::TLS_CRT);
    let chain = certificates(&crt_path, &read(files::TLS_CRT)?).map_err(|e| e.to_string())?;
    certified_key(dir, chain, &read(files::TLS_KEY)?).map_err(|e| e.to_string())
}
