//! Response bodies: a whole document, or a watch stream that stays open.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// One chunk of a watch stream: a line of JSON, or the error that breaks it.
pub(crate) type Chunk = Result<Bytes, io::Error>;

/// The body of every response the fake sends.
#[derive(Debug)]
pub struct FakeBody(Inner);

#[derive(Debug)]
enum Inner {
    Full(Option<Bytes>),
    /// Ends when the sender is dropped (the watch timed out or was closed).
    Stream(mpsc::UnboundedReceiver<Chunk>),
}

impl FakeBody {
    pub(crate) fn full(bytes: Vec<u8>) -> FakeBody {
        FakeBody(Inner::Full(Some(Bytes::from(bytes))))
    }

    pub(crate) fn stream(chunks: mpsc::UnboundedReceiver<Chunk>) -> FakeBody {
        FakeBody(Inner::Stream(chunks))
    }
}

impl Body for FakeBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match &mut self.0 {
            Inner::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Inner::Stream(chunks) => chunks
                .poll_recv(cx)
                .map(|chunk| chunk.map(|c| c.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.0, Inner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Inner::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            Inner::Full(None) => SizeHint::with_exact(0),
            Inner::Stream(_) => SizeHint::default(),
        }
    }
}
