//! Answers the requests the kube client sends through the tower-test mock.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::serve::ListenerExt as _;
use http::{Method, Request, Response, StatusCode, header};
use kube::client::Body;
use serde_json::Value;
use tower_test::mock::Handle;

use crate::body::FakeBody;
use crate::route::{Query, Route, parse_path};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::storage::{ObjectId, PatchKind, Storage, WatchSpec};

pub(crate) type Shared = Arc<Mutex<Storage>>;

pub(crate) fn lock(shared: &Shared) -> MutexGuard<'_, Storage> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Serves until every client built on the mock is dropped.
pub(crate) async fn serve(shared: Shared, mut handle: Handle<Request<Body>, Response<FakeBody>>) {
    while let Some((request, reply)) = handle.next_request().await {
        let response = respond(&shared, request).await;
        reply.send_response(response);
    }
}

/// Serves HTTP/1.1 on `listener` (for a process that reads a kubeconfig)
/// until the task is aborted.
pub(crate) async fn serve_http(shared: Shared, listener: tokio::net::TcpListener) {
    let app = axum::Router::new().fallback(move |request: Request<axum::body::Body>| {
        let shared = Arc::clone(&shared);
        async move {
            let (parts, body) = request.into_parts();
            let body = match axum::body::to_bytes(body, usize::MAX).await {
                Ok(bytes) => Body::from(bytes),
                Err(e) => {
                    let response = error_response(&ApiError::bad_request(e.to_string()));
                    return response.map(axum::body::Body::new);
                }
            };
            respond(&shared, Request::from_parts(parts, body))
                .await
                .map(axum::body::Body::new)
        }
    });
    // As the API server does (Go turns Nagle's algorithm off on every TCP
    // connection): a watch event is sent as it is written.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let _ = axum::serve(listener, app).await;
}

async fn respond(shared: &Shared, request: Request<Body>) -> Response<FakeBody> {
    let (parts, body) = request.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(ToString::to_string)
        .unwrap_or_default();
    lock(shared)
        .requests
        .push((parts.method.clone(), path_and_query));
    let body = match body.collect_bytes().await {
        Ok(bytes) => bytes,
        Err(e) => return error_response(&ApiError::bad_request(e.to_string())),
    };
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    match handle(shared, &parts.method, &parts.uri, content_type, &body) {
        Ok(response) => response,
        Err(error) => error_response(&error),
    }
}

fn handle(
    shared: &Shared,
    method: &Method,
    uri: &http::Uri,
    content_type: &str,
    body: &[u8],
) -> Result<Response<FakeBody>, ApiError> {
    if let Some(group_version) = discovery_path(uri.path()) {
        return lock(shared)
            .api_resources(&group_version)
            .map(|list| json_response(StatusCode::OK, &list))
            .ok_or_else(|| {
                ApiError::new(StatusCode::NOT_FOUND, "NotFound", "no such group/version")
            });
    }
    let route = parse_path(uri.path()).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    })?;
    let query = Query::parse(uri.query());
    let collection = route.collection();
    if lock(shared).unserved.contains(&collection) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        ));
    }
    let namespace = route.namespace.as_deref();
    let Some(name) = route.name.clone() else {
        return match *method {
            Method::GET if query.flag("watch") => watch(shared, &route, &query),
            Method::GET => {
                let (labels, fields) = selectors(&query)?;
                let list = lock(shared).list(&collection, namespace, &labels, &fields);
                Ok(json_response(StatusCode::OK, &list))
            }
            Method::POST => {
                let object = lock(shared).create(&collection, namespace, parse_body(body)?)?;
                Ok(json_response(StatusCode::CREATED, &object))
            }
            _ => Err(method_not_allowed(method)),
        };
    };
    let id = ObjectId {
        collection,
        namespace: namespace.unwrap_or_default().to_string(),
        name,
    };
    let subresource = route.subresource.as_deref();
    let object = match *method {
        Method::GET => lock(shared).get(&id)?,
        Method::PUT => lock(shared).replace(&id, parse_body(body)?, subresource)?,
        Method::PATCH => {
            let kind = match content_type.split(';').next().unwrap_or_default().trim() {
                "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                    PatchKind::Merge
                }
                "application/apply-patch+yaml" => PatchKind::Apply,
                other => {
                    return Err(ApiError::new(
                        StatusCode::UNSUPPORTED_MEDIA_TYPE,
                        "UnsupportedMediaType",
                        format!("the fake API does not take {other:?} patches"),
                    ));
                }
            };
            lock(shared).patch(&id, &parse_body(body)?, kind, subresource)?
        }
        Method::DELETE => lock(shared).delete(&id)?,
        _ => return Err(method_not_allowed(method)),
    };
    Ok(json_response(StatusCode::OK, &object))
}

fn watch(shared: &Shared, route: &Route, query: &Query) -> Result<Response<FakeBody>, ApiError> {
    let (labels, fields) = selectors(query)?;
    let from = match query.get("resourceVersion") {
        None | Some("0") => None,
        Some(rv) => Some(
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    let spec = WatchSpec {
        collection: route.collection(),
        namespace: route.namespace.clone(),
        labels,
        fields,
        bookmarks: query.flag("allowWatchBookmarks"),
    };
    let (id, chunks) = lock(shared).watch(spec, from, query.flag("sendInitialEvents"))?;
    if let Some(seconds) = query.get("timeoutSeconds").and_then(|s| s.parse().ok()) {
        let shared = Arc::clone(shared);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            lock(&shared).end_watch(id);
        });
    }
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(FakeBody::stream(chunks))
        .map_err(|e| ApiError::internal(e.to_string()))
}

fn selectors(query: &Query) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or_default())
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or_default())
        .map_err(ApiError::bad_request)?;
    Ok((labels, fields))
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not JSON: {e}")))
}

fn method_not_allowed(method: &Method) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!("the server does not allow method {method} on this resource"),
    )
}

/// The group/version a discovery path asks about (`/api/v1`, `/apis/g/v`).
fn discovery_path(path: &str) -> Option<String> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["api", version] => Some((*version).to_string()),
        ["apis", group, version] => Some(format!("{group}/{version}")),
        _ => None,
    }
}

fn json_response(code: StatusCode, value: &Value) -> Response<FakeBody> {
    let mut response = Response::new(FakeBody::full(value.to_string().into_bytes()));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn error_response(error: &ApiError) -> Response<FakeBody> {
    json_response(error.code, &error.to_status())
}
