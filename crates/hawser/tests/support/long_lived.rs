//! Traffic that outlives a reload, through HAProxy over TLS: a WebSocket
//! (HTTP/1.1 upgrade), an upload whose body is sent piece by piece, and a
//! bidirectional gRPC stream (HTTP/2, ALPN `h2`), each against the echo
//! backend's matching echo. Every step is bounded by [`TIMEOUT`] and says
//! what went wrong in its `Err`.
//!
//! ```text
//!  WebSocketClient::echo(text) ──text──► echo ──text──► the same text back
//!  SlowUpload::send(chunk) ... finish() ──► echo's body_bytes, body_sha256
//!  GrpcCall::echo(payload) ──[0|len|payload]──► the same message back
//!           finish() ──end of request──► trailers grpc-status
//! ```

use std::convert::Infallible;
use std::net::SocketAddr;

use futures_util::{SinkExt as _, StreamExt as _};
use hawser_echo::EchoReply;
use http_body_util::BodyExt as _;
use http_body_util::channel::{Channel, Sender};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::TIMEOUT;
use super::http::{Response, parse_response, tls_connect};

async fn bounded<T>(
    what: &str,
    step: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(TIMEOUT, step)
        .await
        .unwrap_or_else(|_| Err(format!("{what}: nothing within {TIMEOUT:?}")))
}

/// A WebSocket to `wss://<host><path>`.
#[derive(Debug)]
pub struct WebSocketClient {
    socket: WebSocketStream<TlsStream<TcpStream>>,
}

impl WebSocketClient {
    /// Opens it on `addr` (SNI `host`, ALPN `http/1.1`); the upgrade must be
    /// answered 101.
    pub async fn open(addr: SocketAddr, host: &str, path: &str) -> Result<WebSocketClient, String> {
        bounded("WebSocket upgrade", async {
            let (stream, _) = tls_connect(addr, Some(host), &[b"http/1.1"], None).await?;
            let (socket, response) =
                tokio_tungstenite::client_async(format!("wss://{host}{path}"), stream)
                    .await
                    .map_err(|e| format!("WebSocket upgrade: {e}"))?;
            if response.status() != 101 {
                return Err(format!("WebSocket upgrade answered {}", response.status()));
            }
            Ok(WebSocketClient { socket })
        })
        .await
    }

    /// Sends `text` and expects it back.
    pub async fn echo(&mut self, text: &str) -> Result<(), String> {
        bounded("WebSocket echo", async {
            self.socket
                .send(Message::text(text))
                .await
                .map_err(|e| format!("WebSocket send: {e}"))?;
            match self.socket.next().await {
                Some(Ok(Message::Text(echoed))) if echoed.as_str() == text => Ok(()),
                other => Err(format!("WebSocket answer to {text:?}: {other:?}")),
            }
        })
        .await
    }

    /// Waits until the server side ends the socket (a close frame, the end
    /// of the connection or a reset); `Err` if a message comes instead, or
    /// nothing within [`TIMEOUT`].
    pub async fn expect_closed(&mut self) -> Result<(), String> {
        bounded("WebSocket close", async {
            match self.socket.next().await {
                None | Some(Ok(Message::Close(_)) | Err(_)) => Ok(()),
                Some(Ok(other)) => Err(format!("a message instead of the end: {other:?}")),
            }
        })
        .await
    }

    /// Closes it (close handshake).
    pub async fn close(mut self) {
        let _ = bounded("WebSocket close", async {
            self.socket.close(None).await.map_err(|e| e.to_string())
        })
        .await;
    }
}

/// One `POST`, its body sent piece by piece (chunked HTTP/1.1 over TLS).
#[derive(Debug)]
pub struct SlowUpload {
    stream: TlsStream<TcpStream>,
    sent: u64,
    digest: Sha256,
}

/// What the backend said about an upload, and what was sent.
#[derive(Debug)]
pub struct UploadOutcome {
    pub response: Response,
    pub sent_bytes: u64,
    pub sent_sha256: String,
}

impl UploadOutcome {
    /// The echo backend's reply; fails when the answer is not one.
    pub fn echo(&self) -> EchoReply {
        self.response.echo()
    }
}

impl SlowUpload {
    /// Sends the request head of `POST https://<host><path>` to `addr`.
    pub async fn start(addr: SocketAddr, host: &str, path: &str) -> Result<SlowUpload, String> {
        bounded("upload head", async {
            let (mut stream, _) = tls_connect(addr, Some(host), &[b"http/1.1"], None).await?;
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n\
                 Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            );
            stream
                .write_all(head.as_bytes())
                .await
                .map_err(|e| format!("upload head: {e}"))?;
            Ok(SlowUpload {
                stream,
                sent: 0,
                digest: Sha256::new(),
            })
        })
        .await
    }

    /// Sends `data` as one chunk of the body.
    pub async fn send(&mut self, data: &[u8]) -> Result<(), String> {
        bounded("upload chunk", async {
            let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
            chunk.extend_from_slice(data);
            chunk.extend_from_slice(b"\r\n");
            self.stream
                .write_all(&chunk)
                .await
                .map_err(|e| format!("upload chunk after {} bytes: {e}", self.sent))?;
            self.stream.flush().await.map_err(|e| e.to_string())?;
            self.sent += data.len() as u64;
            self.digest.update(data);
            Ok(())
        })
        .await
    }

    /// Ends the body and reads the answer.
    pub async fn finish(mut self) -> Result<UploadOutcome, String> {
        bounded("upload answer", async move {
            self.stream
                .write_all(b"0\r\n\r\n")
                .await
                .map_err(|e| format!("upload end: {e}"))?;
            let mut raw = Vec::new();
            // HAProxy may close a TLS connection without close_notify.
            if let Err(e) = self.stream.read_to_end(&mut raw).await
                && raw.is_empty()
            {
                return Err(format!("upload answer: {e}"));
            }
            Ok(UploadOutcome {
                response: parse_response(&raw)?,
                sent_bytes: self.sent,
                sent_sha256: hex::encode(self.digest.finalize()),
            })
        })
        .await
    }
}

/// A bidirectional gRPC call to the echo's streaming echo (its
/// `x-echo-stream: 1`), over HTTP/2 on TLS.
#[derive(Debug)]
pub struct GrpcCall {
    messages: Sender<Bytes, Infallible>,
    answer: Incoming,
    received: Vec<u8>,
    _driver: JoinHandle<Result<(), hyper::Error>>,
}

/// `payload` as one gRPC message: not compressed, big-endian length.
pub fn grpc_message(payload: &[u8]) -> Bytes {
    let length = u32::try_from(payload.len()).expect("a message under 4 GiB");
    let mut message = vec![0u8];
    message.extend_from_slice(&length.to_be_bytes());
    message.extend_from_slice(payload);
    Bytes::from(message)
}

impl GrpcCall {
    /// Opens `POST https://<authority><path>` on `addr` (SNI `authority`,
    /// ALPN `h2`); the answer's head must be 200 `application/grpc`.
    pub async fn open(addr: SocketAddr, authority: &str, path: &str) -> Result<GrpcCall, String> {
        bounded("gRPC call", async {
            let (stream, tls) = tls_connect(addr, Some(authority), &[b"h2"], None).await?;
            if tls.alpn.as_deref() != Some("h2") {
                return Err(format!("ALPN settled on {:?}, not h2", tls.alpn));
            }
            let (mut sender, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                    .await
                    .map_err(|e| format!("h2 handshake: {e}"))?;
            let driver = tokio::spawn(connection);
            let (messages, body) = Channel::<Bytes, Infallible>::new(4);
            let request = hyper::Request::post(format!("https://{authority}{path}"))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .header(hawser_echo::STREAM_HEADER, "1")
                .body(body)
                .map_err(|e| format!("request: {e}"))?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| format!("gRPC call: {e}"))?;
            let content_type = response.headers().get("content-type").cloned();
            if response.status() != 200
                || content_type
                    .as_ref()
                    .is_none_or(|t| t != "application/grpc")
            {
                return Err(format!(
                    "gRPC call answered {} {content_type:?}",
                    response.status()
                ));
            }
            Ok(GrpcCall {
                messages,
                answer: response.into_body(),
                received: Vec::new(),
                _driver: driver,
            })
        })
        .await
    }

    /// Sends `payload` as a message and expects the same message back.
    pub async fn echo(&mut self, payload: &[u8]) -> Result<(), String> {
        let message = grpc_message(payload);
        bounded("gRPC echo", async {
            self.messages
                .send_data(message.clone())
                .await
                .map_err(|e| format!("gRPC send: {e}"))?;
            while self.received.len() < message.len() {
                match self.answer.frame().await {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => self.received.extend_from_slice(&data),
                        Err(frame) => return Err(format!("gRPC call ended early: {frame:?}")),
                    },
                    Some(Err(e)) => return Err(format!("gRPC answer: {e}")),
                    None => return Err("gRPC answer ended without trailers".to_string()),
                }
            }
            let echoed: Vec<u8> = self.received.drain(..message.len()).collect();
            if echoed != message {
                return Err(format!("gRPC echo of {} bytes differs", payload.len()));
            }
            Ok(())
        })
        .await
    }

    /// Ends the request and returns the answer's `grpc-status` trailer.
    pub async fn finish(self) -> Result<String, String> {
        let GrpcCall {
            messages,
            mut answer,
            received,
            ..
        } = self;
        drop(messages);
        bounded("gRPC trailers", async {
            if !received.is_empty() {
                return Err(format!("{} bytes echoed unasked", received.len()));
            }
            match answer.frame().await {
                Some(Ok(frame)) => match frame.into_trailers() {
                    Ok(trailers) => trailers
                        .get("grpc-status")
                        .map(|s| String::from_utf8_lossy(s.as_bytes()).into_owned())
                        .ok_or_else(|| format!("trailers without grpc-status: {trailers:?}")),
                    Err(frame) => Err(format!("data after the last message: {frame:?}")),
                },
                Some(Err(e)) => Err(format!("gRPC trailers: {e}")),
                None => Err("gRPC answer ended without trailers".to_string()),
            }
        })
        .await
    }
}
