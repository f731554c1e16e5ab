//! The echo backend behind hawser's local demo and end-to-end tests.
//!
//! ```text
//!  request (HTTP/1.1 or h2c, in clear text or over TLS; any method, any path)
//!      │
//!      ▼
//!  EchoServer ──► 200 application/json EchoReply
//!                 { path, host, method, proto, headers,
//!                   namespace, ingress, service, pod }
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
//! It must not depend on any other hawser crate: it stands in for the
//! backends, and knows nothing of what routes to it.

mod config;
mod error;
mod reply;
mod server;
mod tls;

pub use config::EchoConfig;
pub use error::EchoError;
pub use reply::{DELAY_HEADER, EchoReply, MAX_DELAY, POD_HEADER, STATUS_HEADER};
pub use server::{EchoServer, serve};
pub use tls::tls_config;
