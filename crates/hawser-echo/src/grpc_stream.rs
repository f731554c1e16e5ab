//! The streaming gRPC echo: each gRPC message of the request is sent back as
//! soon as it has arrived whole, and the answer ends with the trailer
//! `grpc-status: 0` once the request has ended; a call stays open as long
//! as the client keeps its request open (a bidirectional stream).
//!
//! ```text
//!  request body:  [flag u8][len u32 BE][message] [flag][len][message] ... end
//!  answer body:   the same frames, each once whole  ...  trailers grpc-status
//! ```
//!
//! Opt-in ([`STREAM_HEADER`]`: 1`): other gRPC-shaped requests get the JSON
//! answer, which routing tests read.

use std::{
    convert::Infallible,
    pin::Pin,
    task::{Context, Poll, ready},
};

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts},
    response::Response,
};
use http_body::Frame;

/// Request header that turns a gRPC request (`content-type:
/// application/grpc...`) into a streaming echo call.
pub const STREAM_HEADER: &str = "x-echo-stream";

/// The largest message echoed, gRPC's default receive limit; a larger
/// one ends the call with `RESOURCE_EXHAUSTED` instead of being buffered.
const MAX_MESSAGE: usize = 4 * 1024 * 1024;
/// gRPC's length-prefixed message header: a compressed flag, a length.
const PREFIX: usize = 5;

/// gRPC status codes the echo ends a call with.
const OK: u16 = 0;
const RESOURCE_EXHAUSTED: u16 = 8;
const INTERNAL: u16 = 13;

/// True for a gRPC request that asks for the streaming echo.
pub(crate) fn wants_stream(parts: &Parts) -> bool {
    let grpc = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/grpc"));
    grpc && parts
        .headers
        .get(STREAM_HEADER)
        .is_some_and(|value| value.as_bytes() == b"1")
}

/// A 200 `application/grpc` answer whose body echoes `request`'s messages.
pub(crate) fn answer(request: Body) -> Response {
    let mut response = Response::new(Body::new(EchoMessages {
        request,
        pending: Vec::new(),
        ended: false,
    }));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    response
}

/// The answer body: pulls the request body only as fast as the answer is
/// read, so nothing but one partial message is ever held.
struct EchoMessages {
    request: Body,
    /// Bytes of the request not echoed yet: at most one partial message.
    pending: Vec<u8>,
    /// The trailers were sent (or the request broke): nothing follows.
    ended: bool,
}

impl EchoMessages {
    /// The next whole message (prefix included) in `pending`, if one is;
    /// `Err` with a status when the next one is too large to take.
    fn take_message(&mut self) -> Result<Option<Bytes>, (u16, &'static str)> {
        let Some(prefix) = self.pending.get(..PREFIX) else {
            return Ok(None);
        };
        let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        if length > MAX_MESSAGE {
            return Err((RESOURCE_EXHAUSTED, "message larger than 4 MiB"));
        }
        if self.pending.len() < PREFIX + length {
            return Ok(None);
        }
        let rest = self.pending.split_off(PREFIX + length);
        Ok(Some(Bytes::from(std::mem::replace(
            &mut self.pending,
            rest,
        ))))
    }

    fn end(&mut self, status: u16, message: &'static str) -> Frame<Bytes> {
        self.ended = true;
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from(status));
        if !message.is_empty() {
            trailers.insert("grpc-message", HeaderValue::from_static(message));
        }
        Frame::trailers(trailers)
    }
}

impl http_body::Body for EchoMessages {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            match this.take_message() {
                Ok(Some(message)) => return Poll::Ready(Some(Ok(Frame::data(message)))),
                Ok(None) => {}
                Err((status, why)) => return Poll::Ready(Some(Ok(this.end(status, why)))),
            }
            match ready!(Pin::new(&mut this.request).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    // Request trailers carry nothing the echo answers.
                    if let Ok(data) = frame.into_data() {
                        this.pending.extend_from_slice(&data);
                    }
                }
                Some(Err(error)) => {
                    // The client reset or lost the call: nobody reads an answer.
                    tracing::debug!(%error, "gRPC request broke off");
                    this.ended = true;
                    return Poll::Ready(None);
                }
                None if this.pending.is_empty() => {
                    return Poll::Ready(Some(Ok(this.end(OK, ""))));
                }
                None => {
                    let end = this.end(INTERNAL, "the request ended inside a message");
                    return Poll::Ready(Some(Ok(end)));
                }
            }
        }
    }
}
