use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_stream::StreamExt;

use super::*;

/// A server config with a self-signed certificate for `agent.test`, and a
/// client config trusting it.
fn tls_configs() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let issued = rcgen::generate_simple_self_signed(vec!["agent.test".to_string()]).unwrap();
    let cert: CertificateDer<'static> = issued.cert.der().clone();
    let key = PrivateKeyDer::from(PrivatePkcs8KeyDer::from(issued.signing_key.serialize_der()));
    let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (Arc::new(server), Arc::new(client))
}

#[tokio::test]
async fn an_accepted_connection_sends_small_writes_at_once() {
    let (server, client) = tls_configs();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut accepted = incoming(listener, server);
    let connecting = tokio::spawn(async move {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("agent.test").unwrap();
        TlsConnector::from(client).connect(name, tcp).await.unwrap()
    });
    let stream = accepted.next().await.unwrap().unwrap();
    let _client = connecting.await.unwrap();
    assert!(
        stream.get_ref().0.nodelay().unwrap(),
        "Nagle's algorithm is off on a control connection"
    );
}
