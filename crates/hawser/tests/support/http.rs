//! A small HTTP client: HTTP/1.1 over TCP or TLS (with or without SNI), and
//! HTTP/2 over TLS with ALPN `h2`. For TLS it reports the certificate the
//! server chose, so tests can assert SNI selection.
//!
//! HTTP/1.1 requests are written by hand, so a test controls the exact
//! `Host` header (case, port, odd characters) and the raw request target.

use std::net::SocketAddr;
use std::sync::Arc;

use hawser_echo::EchoReply;
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use x509_parser::extensions::GeneralName;

use super::TIMEOUT;

/// What came back.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Set for requests over TLS.
    pub tls: Option<TlsInfo>,
}

/// What the TLS handshake showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsInfo {
    /// The served leaf certificate's subject common name.
    pub subject_cn: Option<String>,
    /// The served leaf certificate's DNS subject alternative names.
    pub dns_names: Vec<String>,
    /// The protocol ALPN settled on, if any.
    pub alpn: Option<String>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The echo backend's answer; fails when the body is not one.
    pub fn echo(&self) -> EchoReply {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not an echo reply ({e}): status {} body {:?}",
                self.status,
                self.text()
            )
        })
    }

    pub fn tls(&self) -> &TlsInfo {
        self.tls.as_ref().expect("a response over TLS")
    }
}

/// `GET <target>` over HTTP/1.1 on plain TCP, with `Host: <host>`.
pub async fn http1_get(addr: SocketAddr, host: &str, target: &str) -> Result<Response, String> {
    http1_request(addr, &Request::get(host, target)).await
}

/// A request as the HTTP/1.1 client writes it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub host: String,
    pub target: String,
    /// Sent after `Host`, in order.
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn get(host: &str, target: &str) -> Request {
        Request {
            method: "GET".to_string(),
            host: host.to_string(),
            target: target.to_string(),
            headers: Vec::new(),
        }
    }

    pub fn method(mut self, method: &str) -> Request {
        self.method = method.to_string();
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// `request` over HTTP/1.1 on plain TCP.
pub async fn http1_request(addr: SocketAddr, request: &Request) -> Result<Response, String> {
    bounded(async {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        exchange_request(stream, request).await
    })
    .await
}

/// `GET <target>` over HTTP/1.1 on TLS; SNI `sni`, or none when `None`.
pub async fn https1_get(
    addr: SocketAddr,
    sni: Option<&str>,
    host: &str,
    target: &str,
) -> Result<Response, String> {
    bounded(async {
        let (stream, tls) = tls_connect(addr, sni, &[b"http/1.1"], None).await?;
        let mut response = exchange(stream, host, target).await?;
        response.tls = Some(tls);
        Ok(response)
    })
    .await
}

/// [`https1_get`], showing the client certificate `(cert_pem, key_pem)`.
pub async fn https1_get_as(
    addr: SocketAddr,
    sni: &str,
    host: &str,
    target: &str,
    client: (&str, &str),
) -> Result<Response, String> {
    bounded(async {
        let (stream, tls) = tls_connect(addr, Some(sni), &[b"http/1.1"], Some(client)).await?;
        let mut response = exchange(stream, host, target).await?;
        response.tls = Some(tls);
        Ok(response)
    })
    .await
}

/// `GET https://<authority><path>` over HTTP/2 on TLS, offering only ALPN `h2`.
pub async fn h2_get(
    addr: SocketAddr,
    sni: &str,
    authority: &str,
    path: &str,
) -> Result<Response, String> {
    bounded(async {
        let (stream, tls) = tls_connect(addr, Some(sni), &[b"h2"], None).await?;
        let request = hyper::Request::get(format!("https://{authority}{path}"))
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("request: {e}"))?;
        h2_exchange(stream, request, Some(tls)).await
    })
    .await
}

/// A gRPC-shaped request (`POST`, `content-type: application/grpc`, an
/// empty body) over HTTP/2 in clear text with prior knowledge (h2c).
pub async fn h2c_grpc(addr: SocketAddr, authority: &str, path: &str) -> Result<Response, String> {
    bounded(async {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let request = hyper::Request::post(format!("http://{authority}{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("request: {e}"))?;
        h2_exchange(stream, request, None).await
    })
    .await
}

/// One HTTP/2 request on a fresh connection over `stream`, read whole.
async fn h2_exchange<S>(
    stream: S,
    request: hyper::Request<Empty<Bytes>>,
    tls: Option<TlsInfo>,
) -> Result<Response, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| format!("h2 handshake: {e}"))?;
    tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("h2 request: {e}"))?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (n.as_str().to_string(), value)
        })
        .collect();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("h2 body: {e}"))?
        .to_bytes()
        .to_vec();
    Ok(Response {
        status,
        headers,
        body,
        tls,
    })
}

async fn bounded<F>(exchange: F) -> Result<Response, String>
where
    F: Future<Output = Result<Response, String>>,
{
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {TIMEOUT:?}")))
}

/// One `GET`, `Connection: close`, the answer read to the end.
async fn exchange<S>(stream: S, host: &str, target: &str) -> Result<Response, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    exchange_request(stream, &Request::get(host, target)).await
}

/// One request, `Connection: close`, the answer read to the end.
async fn exchange_request<S>(mut stream: S, request: &Request) -> Result<Response, String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\n",
        request.method, request.target, request.host
    );
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("User-Agent: hawser-e2e\r\nConnection: close\r\n\r\n");
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    // HAProxy may close a TLS connection without close_notify; what was read counts.
    if let Err(e) = stream.read_to_end(&mut raw).await
        && raw.is_empty()
    {
        return Err(format!("receive: {e}"));
    }
    parse_response(&raw)
}

pub(super) fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let lossy = || String::from_utf8_lossy(raw).into_owned();
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no complete response head in {:?}", lossy()))?;
    let head = std::str::from_utf8(&raw[..head_end]).map_err(|e| format!("head: {e}"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no status line in {:?}", lossy()))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut response = Response {
        status,
        headers,
        body: raw[head_end + 4..].to_vec(),
        tls: None,
    };
    if response
        .header("transfer-encoding")
        .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
    {
        response.body = dechunk(&response.body)?;
    } else if let Some(length) = response.header("content-length") {
        let length: usize = length.parse().map_err(|_| "bad content-length")?;
        response.body.truncate(length);
    }
    Ok(response)
}

fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk size")?;
        let size_text = std::str::from_utf8(&body[..line_end]).map_err(|e| e.to_string())?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|e| format!("chunk size: {e}"))?;
        if size == 0 {
            return Ok(out);
        }
        let data = body
            .get(line_end + 2..line_end + 2 + size)
            .ok_or("truncated chunk")?;
        out.extend_from_slice(data);
        body = body
            .get(line_end + 4 + size..)
            .ok_or("truncated chunk end")?;
    }
}

/// A TLS connection to `addr` offering `alpn` (SNI `sni`, none when `None`;
/// `client` a certificate and key to show), and what its handshake showed.
/// Any server certificate is accepted ([`AnyCertificate`]).
pub(super) async fn tls_connect(
    addr: SocketAddr,
    sni: Option<&str>,
    alpn: &[&[u8]],
    client: Option<(&str, &str)>,
) -> Result<(TlsStream<TcpStream>, TlsInfo), String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS config: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)));
    let mut config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            use rustls::pki_types::PrivateKeyDer;
            use rustls::pki_types::pem::PemObject as _;
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("client certificate: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                .map_err(|e| format!("client key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate: {e}"))?
        }
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // rustls sends no SNI for an IP address: the way to ask without one.
    let server_name = match sni {
        Some(name) => ServerName::try_from(name.to_string()).map_err(|e| format!("SNI: {e}"))?,
        None => ServerName::IpAddress(addr.ip().into()),
    };
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let stream = TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("TLS handshake with {addr} (SNI {sni:?}): {e}"))?;
    let (_, connection) = stream.get_ref();
    let leaf = connection
        .peer_certificates()
        .and_then(|chain| chain.first())
        .ok_or("the server sent no certificate")?;
    let mut info = leaf_info(leaf)?;
    info.alpn = connection
        .alpn_protocol()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    Ok((stream, info))
}

fn leaf_info(leaf: &CertificateDer<'_>) -> Result<TlsInfo, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf)
        .map_err(|e| format!("served certificate: {e}"))?;
    let subject_cn = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_string);
    let dns_names = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|name| match name {
                    GeneralName::DNSName(dns) => Some((*dns).to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(TlsInfo {
        subject_cn,
        dns_names,
        alpn: None,
    })
}

/// Accepts any server certificate (signatures are still checked): the tests
/// assert which certificate was served instead of trusting a CA.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
