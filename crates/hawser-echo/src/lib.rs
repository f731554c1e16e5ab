//! The echo backend behind hawser's local demo and end-to-end tests.
//!
//! ```text
//!  request (HTTP/1.1 or h2c, in clear text or over TLS; any method, any path)
//!      │
//!      ├─ Upgrade: websocket ──────────────► 101, a WebSocket echoing every message
//!      ├─ application/grpc + x-echo-stream: 1 ► each gRPC message echoed as it
//!      │                                     arrives, then trailers grpc-status: 0
//!      ▼
//!  EchoServer, once the body is read whole ──► 200 application/json EchoReply
//!                 { path, host, method, proto, headers,
//!                   namespace, ingress, service, pod,
//!                   body_bytes, body_sha256 }
//! ```
//!
//! Like the Kubernetes Ingress and Gateway API conformance echo servers, every
//! answer says which request arrived and which backend answered it, so a test
//! can assert routing (`service`, `pod`) and request rewriting (`path`, `host`,
//! `headers`) from the response body alone. A request header
//! [`STATUS_HEADER`]`: NNN` makes the server answer with that status instead
//! of 200, and [`DELAY_HEADER`]`: MS` holds the answer back MS milliseconds
//! (up to [`MAX_DELAY`]), a slow request for tests of draining and stopping.
//!
//! The body of a request is read to its end as it streams in, never held
//! nor cut, and `body_bytes` and `body_sha256` in the answer say what it
//! added up to: a test of a long upload checks every byte arrived. For the
//! traffic that outlives one request, a WebSocket echoes every text and
//! binary message, and a gRPC call with [`STREAM_HEADER`]`: 1` is a
//! bidirectional stream that echoes each message (see `grpc_stream`).
//!
//! It must not depend on any other hawser crate: it stands in for the
//! backends, and knows nothing of what routes to it.

mod body;
mod config;
mod error;
mod grpc_stream;
mod reply;
mod server;
mod tls;
mod websocket;

pub use config::EchoConfig;
pub use error::EchoError;
pub use grpc_stream::STREAM_HEADER;
pub use reply::{DELAY_HEADER, EchoReply, MAX_DELAY, POD_HEADER, STATUS_HEADER};
pub use server::{EchoServer, serve};
pub use tls::tls_config;
