//! Failures as the API server reports them: an HTTP code and a `Status` body.

use http::StatusCode;
use serde_json::{Value, json};

/// A failed request; becomes a `Status` document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub code: StatusCode,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `BadRequest`, `Expired`, ...
    pub reason: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
        }
    }

    pub fn not_found(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{resource} \"{name}\" not found"),
        )
    }

    pub fn already_exists(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!("{resource} \"{name}\" already exists"),
        )
    }

    pub fn conflict(resource: &str, name: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {resource} \"{name}\": the object has been \
                 modified; please apply your changes to the latest version and try again"
            ),
        )
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// What a watch from a compacted resourceVersion gets.
    pub fn gone(resource_version: u64, oldest: u64) -> ApiError {
        ApiError::new(
            StatusCode::GONE,
            "Expired",
            format!("too old resource version: {resource_version} ({oldest})"),
        )
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    /// The `Status` document (`kind: Status`, `status: Failure`).
    pub fn to_status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code.as_u16(),
        })
    }
}

/// What a delete of an object without finalizers answers.
pub(crate) fn success(name: &str, plural: &str, uid: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "kind": plural, "uid": uid},
    })
}
