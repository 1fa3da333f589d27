//! The API's refusals: a status and a JSON body `{"error", "message"}`,
//! the `error` one of [`ErrorKind`]'s names.
//!
//! | status | `error` | when |
//! |---|---|---|
//! | 400 | `malformed-json` | a body that must be JSON is not |
//! | 400 | `invalid-body` | a JSON body of the wrong shape (e.g. a batch that is not an array) |
//! | 400 | `bad-request` | a bad path parameter, query or header |
//! | 401 | `unauthorized` | no bearer token, or one that is not a tenant's |
//! | 404 | `unknown-topic` | no such topic, or another tenant's |
//! | 404 | `not-found` | no such job, or another tenant's; no such endpoint |
//! | 405 | `method-not-allowed` | a method the endpoint does not take |
//! | 409 | `not-an-incident` | retrying or discarding a job that is not an open incident |
//! | 409 | `no-rollback` | no version to roll back to |
//! | 409 | `not-a-plugin-topic` | deploying to a topic run by native code |
//! | 409 | `store-conflict` | the store met a concurrent write: try again |
//! | 409 | `cursor-ahead` | an outcome-stream cursor past the stream's head (the body's `head_cursor` is the head) |
//! | 410 | `cursor-gone` | an outcome-stream cursor below what was pruned (the body's `oldest_cursor` is where to start again) |
//! | 413 | `payload-too-large` | a body above the configured limit |
//! | 422 | `invalid-plugin` | a deployed component that fails validation |
//! | 429 | `quota-exceeded` | the tenant's `max_queued` is reached |
//! | 500 | `internal` | husk failed |
//! | 500 | `store-failed` | the store failed in a way that will not pass by itself (a corrupt value, a schema from a newer husk) |
//! | 501 | `not-supported` | the store of an embedding program lacks the capability |
//! | 503 | `store-unavailable` | the store cannot be reached or is busy: try again |

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use husk::dispatch::EnqueueError;
use husk::host::DeployError;
use husk::store::StoreError;

/// What kind of refusal: stable names for scripts, each with its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// 400: a body that must be JSON is not.
    MalformedJson,
    /// 400: a JSON body of the wrong shape.
    InvalidBody,
    /// 400: a bad path parameter, query or header.
    BadRequest,

    /// 401: no bearer token, or one that is not a tenant's.
    Unauthorized,
    /// 404: no such topic, or another tenant's.
    UnknownTopic,
    /// 404: no such job, or another tenant's; no such endpoint.
    NotFound,
    /// 405: a method the endpoint does not take.
    MethodNotAllowed,
    /// 409: the job is not an open incident.
    NotAnIncident,
    /// 409: no version to roll back to.
    NoRollback,
    /// 409: the topic is run by native code.
    NotAPluginTopic,
    /// 409: the store met a concurrent write: try again.
    StoreConflict,
    /// 409: an outcome-stream cursor past the head.
    CursorAhead,
    /// 410: an outcome-stream cursor below what was pruned.
    CursorGone,
    /// 413: a body above the configured limit.
    PayloadTooLarge,
    /// 422: a component that fails validation.
    InvalidPlugin,
    /// 429: the tenant's `max_queued` is reached.
    QuotaExceeded,
    /// 500: husk failed.
    Internal,
    /// 500: the store failed in a way that will not pass by itself.
    StoreFailed,
    /// 501: the store lacks the capability.
    NotSupported,
    /// 503: the store cannot be reached or is busy: try again.
    StoreUnavailable,
}

impl ErrorKind {
    /// Its HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorKind::MalformedJson | ErrorKind::InvalidBody | ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
            ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorKind::UnknownTopic | ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorKind::NotAnIncident
            | ErrorKind::NoRollback
            | ErrorKind::NotAPluginTopic
            | ErrorKind::StoreConflict
            | ErrorKind::CursorAhead => StatusCode::CONFLICT,
            ErrorKind::CursorGone => StatusCode::GONE,
            ErrorKind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorKind::InvalidPlugin => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorKind::QuotaExceeded => StatusCode::TOO_MANY_REQUESTS,
            ErrorKind::Internal | ErrorKind::StoreFailed => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::NotSupported => StatusCode::NOT_IMPLEMENTED,
            ErrorKind::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// A refusal's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ApiError {
    /// What kind of refusal.
    pub error: ErrorKind,
    /// What went wrong, for people.
    pub message: String,
    /// `cursor-gone`: the oldest cursor still complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_cursor: Option<u64>,
    /// `cursor-ahead`: the stream's head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_cursor: Option<u64>,
}

impl ApiError {
    /// A refusal.
    pub fn new(error: ErrorKind, message: impl Into<String>) -> Self {
        Self { error, message: message.into(), oldest_cursor: None, head_cursor: None }
    }

    /// Its HTTP status.
    pub fn status(&self) -> StatusCode {
        self.error.status()
    }

    pub(crate) fn unauthorized(message: &str) -> Self {
        Self::new(ErrorKind::Unauthorized, message)
    }

    pub(crate) fn unknown_topic(topic: &str) -> Self {
        Self::new(ErrorKind::UnknownTopic, format!("no topic `{topic}`"))
    }

    pub(crate) fn job_not_found(id: impl std::fmt::Display) -> Self {
        Self::new(ErrorKind::NotFound, format!("no job {id}"))
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadRequest, message)
    }

    /// A body that could not be read as `what`: not JSON at all, or JSON
    /// of another shape.
    pub(crate) fn body(error: &serde_json::Error, what: &str) -> Self {
        if error.is_data() {
            Self::new(ErrorKind::InvalidBody, format!("the body is JSON but not {what}: {error}"))
        } else {
            Self::new(ErrorKind::MalformedJson, format!("the body is not valid JSON: {error}"))
        }
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), Json(self)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        tracing::error!(%error, retryable = error.is_retryable(), "store failed during a request");
        let kind = match &error {
            StoreError::Unavailable { .. } => ErrorKind::StoreUnavailable,
            StoreError::Conflict { .. } => ErrorKind::StoreConflict,
            // An embedder's store without listing, incidents or pauses.
            StoreError::Unsupported { .. } => ErrorKind::NotSupported,
            _ => ErrorKind::StoreFailed,
        };
        Self::new(kind, error.to_string())
    }
}

impl From<EnqueueError> for ApiError {
    fn from(error: EnqueueError) -> Self {
        match error {
            EnqueueError::UnknownTopic(topic) => Self::unknown_topic(&topic),
            EnqueueError::QuotaExceeded { .. } => Self::new(ErrorKind::QuotaExceeded, error.to_string()),
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
            DeployError::NotWasm(_) => Self::new(ErrorKind::NotAPluginTopic, message),
            DeployError::Invalid { .. } | DeployError::MissingClassify(_) => {
                Self::new(ErrorKind::InvalidPlugin, message)
            }
            DeployError::NoRollback { .. } => Self::new(ErrorKind::NoRollback, message),
            DeployError::Store(error) => error.into(),
            _ => Self::internal(message),
        }
    }
}
