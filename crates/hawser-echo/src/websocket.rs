//! WebSockets: a request that asks to upgrade to one (HTTP/1.1 `Upgrade:
//! websocket`) gets a WebSocket that echoes every text and binary message
//! back as it is, until the client closes it.

use axum::{
    extract::{
        FromRequestParts as _,
        ws::{Message, WebSocket, WebSocketUpgrade},
    },
    http::{header, request::Parts},
    response::{IntoResponse as _, Response},
};

/// True when the request asks for a WebSocket.
pub(crate) fn is_upgrade(parts: &Parts) -> bool {
    parts
        .headers
        .get(header::UPGRADE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .split(',')
                .any(|protocol| protocol.trim().eq_ignore_ascii_case("websocket"))
        })
}

/// Answers the upgrade (101), or says why it cannot be one (e.g. 400 for a
/// missing `Sec-WebSocket-Key`), and echoes the socket's messages.
pub(crate) async fn upgrade(parts: &mut Parts) -> Response {
    match WebSocketUpgrade::from_request_parts(parts, &()).await {
        Ok(upgrade) => upgrade.on_upgrade(echo_messages),
        Err(rejection) => rejection.into_response(),
    }
}

/// Sends every data message back; pings are answered and a close is
/// returned by the WebSocket itself, after which `recv` ends.
async fn echo_messages(mut socket: WebSocket) {
    while let Some(Ok(message)) = socket.recv().await {
        if matches!(message, Message::Text(_) | Message::Binary(_))
            && socket.send(message).await.is_err()
        {
            break;
        }
    }
}
