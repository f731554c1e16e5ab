//! rustls configurations that read the [`SharedMaterial`] on every handshake: TLS 1.3
//! only, ALPN `h2`, a client certificate mandatory, no session resumption.
//!
//! Resumption is off on both sides because a resumed session skips certificate
//! verification: every connection must be checked against the trust of its own moment
//! (a rotated CA, a previous CA past its deadline). The link carries few, long-lived
//! connections, so the full handshake costs nothing that matters.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, Resumption};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, NoServerSessionStorage, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, DistinguishedName, OtherError,
    ServerConfig, SignatureScheme,
};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::material::Material;
use super::shared::SharedMaterial;
use super::verify::{PeerError, verify_client_chain, verify_server_chain};
use super::{provider, system_time};

/// [`verify_client_chain`] or [`verify_server_chain`].
type ChainCheck = fn(&Material, &[CertificateDer<'_>], &str, SystemTime) -> Result<(), PeerError>;

/// The application protocol: gRPC over HTTP/2.
const ALPN_H2: &[u8] = b"h2";

/// The agent's server configuration: presents the current identity and accepts only a
/// client that chains to the current trust, carries `clientAuth` and is named
/// `expected_client_name`. Without valid material every handshake fails.
pub fn server_config(material: SharedMaterial, expected_client_name: String) -> Arc<ServerConfig> {
    let provider = provider();
    let verifier = PeerVerifier {
        material: material.clone(),
        expected_name: expected_client_name,
        provider: Arc::clone(&provider),
    };
    #[expect(
        clippy::expect_used,
        reason = "the ring provider always supports TLS 1.3: this cannot fail"
    )]
    let builder = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3");
    let mut config = builder
        .with_client_cert_verifier(Arc::new(verifier))
        .with_cert_resolver(Arc::new(CurrentIdentity { material }));
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    Arc::new(config)
}

/// The controller's client configuration: presents the current identity and accepts only
/// a server that chains to the current trust, carries `serverAuth` and is named
/// `expected_server_name`, whatever name or address was dialed.
pub fn client_config(material: SharedMaterial, expected_server_name: String) -> Arc<ClientConfig> {
    let provider = provider();
    let verifier = PeerVerifier {
        material: material.clone(),
        expected_name: expected_server_name,
        provider: Arc::clone(&provider),
    };
    #[expect(
        clippy::expect_used,
        reason = "the ring provider always supports TLS 1.3: this cannot fail"
    )]
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3");
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_cert_resolver(Arc::new(CurrentIdentity { material }));
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    config.resumption = Resumption::disabled();
    Arc::new(config)
}

/// Presents the identity of the current material, on either side.
#[derive(Debug)]
struct CurrentIdentity {
    material: SharedMaterial,
}

impl CurrentIdentity {
    fn resolve(&self) -> Option<Arc<CertifiedKey>> {
        let identity = self.material.current().map(|m| m.certified_key());
        if identity.is_none() {
            tracing::debug!(
                dir = %self.material.dir().display(),
                "no valid tls material: no identity to present"
            );
        }
        identity
    }
}

impl ResolvesServerCert for CurrentIdentity {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        CurrentIdentity::resolve(self)
    }
}

impl ResolvesClientCert for CurrentIdentity {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        CurrentIdentity::resolve(self)
    }

    fn has_certs(&self) -> bool {
        // Whether there is one is decided per handshake, in `resolve`.
        true
    }
}

/// Verifies the peer against the current material at the moment of the handshake.
#[derive(Debug)]
struct PeerVerifier {
    material: SharedMaterial,
    expected_name: String,
    provider: Arc<CryptoProvider>,
}

impl PeerVerifier {
    fn verify(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
        check: ChainCheck,
    ) -> Result<(), rustls::Error> {
        let Some(material) = self.material.current() else {
            let error = PeerError::NoLocalMaterial {
                dir: self.material.dir().to_owned(),
            };
            return Err(rustls::Error::General(error.to_string()));
        };
        let mut chain = Vec::with_capacity(1 + intermediates.len());
        chain.push(end_entity.clone());
        chain.extend(intermediates.iter().cloned());
        check(&material, &chain, &self.expected_name, system_time(now)).map_err(|error| {
            tracing::debug!(error = %error, kind = error.metric_label(), "peer refused");
            let refused = Refused(error);
            rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
                refused,
            ))))
        })
    }

    fn schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }

    /// Handshake signatures are checked the same way for both roles.
    fn signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
        check: fn(
            &[u8],
            &CertificateDer<'_>,
            &DigitallySignedStruct,
            &rustls::crypto::WebPkiSupportedAlgorithms,
        ) -> Result<HandshakeSignatureValid, rustls::Error>,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        check(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
}

/// A [`PeerError`] carried through rustls, which shows it with `{:?}`: so `Debug` prints
/// the message, and the handshake error reads as the reason.
struct Refused(PeerError);

impl fmt::Debug for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Refused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl ClientCertVerifier for PeerVerifier {
    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // The trust changes under this verifier; the client has one identity anyway.
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.verify(end_entity, intermediates, now, verify_client_chain)
            .map(|()| ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(message, cert, dss, verify_tls12_signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(message, cert, dss, verify_tls13_signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes()
    }
}

impl ServerCertVerifier for PeerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        // The controller dials addresses; the agent is known by its certificate name.
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verify(end_entity, intermediates, now, verify_server_chain)
            .map(|()| ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(message, cert, dss, verify_tls12_signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(message, cert, dss, verify_tls13_signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes()
    }
}

#[cfg(test)]
mod tests;
