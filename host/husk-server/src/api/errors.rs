//! The API's refusals: a status and a JSON body `{"error", "message"}`.
//!
//! | status | `error` | when |
//! |---|---|---|
//! | 400 | `malformed-json` | a body that must be JSON is not |
//! | 400 | `bad-request` | a bad path parameter, query or header |
//! | 401 | `unauthorized` | no bearer token, or an unknown one |
//! | 404 | `unknown-topic` | no such topic, or another tenant's |
//! | 404 | `not-found` | no such job, or another tenant's; no such endpoint |
//! | 409 | `not-an-incident` | retrying or discarding a job that is not an open incident |
//! | 409 | `no-rollback` | no version to roll back to |
//! | 409 | `not-a-plugin-topic` | deploying to a topic run by native code |
//! | 409 | `store-conflict` | the store met a concurrent write: try again |
//! | 410 | `cursor-gone` | an outcome-stream cursor below what was pruned (the body's `oldest_cursor` is where to start again) |
//! | 413 | `payload-too-large` | a body above the configured limit |
//! | 422 | `invalid-plugin` | a deployed component that fails validation |
//! | 429 | `quota-exceeded` | the tenant's `max_queued` is reached |
//! | 500 | `internal` | husk failed |
//! | 500 | `store-failed` | the store failed in a way that will not pass by itself (a corrupt value, a schema from a newer husk) |
//! | 503 | `store-unavailable` | the store cannot be reached or is busy: try again |

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use husk::dispatch::EnqueueError;
use husk::host::DeployError;
use husk::store::StoreError;

/// A refusal: its status, a stable kind and a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The kind, stable for scripts (see the module docs).
    pub error: &'static str,
    /// What went wrong, for people.
    pub message: String,
}

impl ApiError {
    /// A refusal.
    pub fn new(status: StatusCode, error: &'static str, message: impl Into<String>) -> Self {
        Self { status, error, message: message.into() }
    }

    pub(crate) fn unauthorized(message: &str) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub(crate) fn unknown_topic(topic: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "unknown-topic", format!("no topic `{topic}`"))
    }

    pub(crate) fn job_not_found(id: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", format!("no job {id}"))
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", message)
    }

    pub(crate) fn malformed_json(error: &serde_json::Error) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed-json", format!("the body is not valid JSON: {error}"))
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.error, "message": self.message });
        (self.status, Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        tracing::error!(%error, retryable = error.is_retryable(), "store failed during a request");
        let (status, kind) = match &error {
            StoreError::Unavailable { .. } => (StatusCode::SERVICE_UNAVAILABLE, "store-unavailable"),
            StoreError::Conflict { .. } => (StatusCode::CONFLICT, "store-conflict"),
            // An embedder's store without listing, incidents or pauses.
            StoreError::Unsupported { .. } => (StatusCode::NOT_IMPLEMENTED, "not-supported"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "store-failed"),
        };
        Self::new(status, kind, error.to_string())
    }
}

impl From<EnqueueError> for ApiError {
    fn from(error: EnqueueError) -> Self {
        match error {
            EnqueueError::UnknownTopic(topic) => Self::unknown_topic(&topic),
            EnqueueError::QuotaExceeded { .. } => {
                Self::new(StatusCode::TOO_MANY_REQUESTS, "quota-exceeded", error.to_string())
            }
            EnqueueError::Store(error) => error.into(),
            // A refusal this husk does not know how to map yet.
            other => Self::internal(other.to_string()),
        }
    }
}

impl From<DeployError> for ApiError {
    fn from(error: DeployError) -> Self {
        let message = error.to_string();
        match error {
            DeployError::UnknownTopic(topic) => Self::unknown_topic(&topic),
            DeployError::NotWasm(_) => Self::new(StatusCode::CONFLICT, "not-a-plugin-topic", message),
            DeployError::Invalid { .. } | DeployError::MissingClassify(_) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-plugin", message)
            }
            DeployError::NoRollback { .. } => Self::new(StatusCode::CONFLICT, "no-rollback", message),
            DeployError::Store(error) => error.into(),
            _ => Self::internal(message),
        }
    }
}
