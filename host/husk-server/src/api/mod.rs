//! The HTTP API of `husk serve` (axum): JSON under `/v1`, bearer tokens per
//! tenant, plus `/healthz` and `/metrics` ([`crate::router`] adds the
//! dashboard under `/ui`).
//!
//! Every refusal is a specific 4xx with a JSON body `{"error": kind,
//! "message": text}` (see [`ApiError`]); a refused request changes nothing.
//! A tenant sees only its own topics and jobs: anything else is 404, exactly
//! as if it did not exist. Store calls block, so they run on tokio's
//! blocking pool, never on the threads serving connections.

mod errors;
mod jobs;
mod outcomes;
mod plugins;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use bytesize::ByteSize;
use http_body_util::BodyExt;

pub use errors::ApiError;
pub(crate) use jobs::parse_time;
pub use outcomes::OutcomeFeed;

use crate::metrics::Metrics;
use crate::tokens::Tenants;
use husk::host::Host;
use husk::store::{JobRecord, ListFilter, StoreError};

/// Limits of request bodies.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    /// A job's input.
    pub input: usize,
    /// A deployed component.
    pub plugin: usize,
    /// A batch enqueue (all its jobs; each input within `input`).
    pub batch: usize,
}

/// What every handler shares.
pub struct Api {
    host: Arc<Host>,
    tenants: Tenants,
    metrics: Arc<Metrics>,
    pub(crate) feed: Arc<OutcomeFeed>,
    limits: BodyLimits,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("host", &self.host).finish_non_exhaustive()
    }
}

impl Api {
    /// The API over `host`.
    pub fn new(
        host: Arc<Host>,
        tenants: Tenants,
        metrics: Arc<Metrics>,
        feed: Arc<OutcomeFeed>,
        limits: BodyLimits,
    ) -> Self {
        Self { host, tenants, metrics, feed, limits }
    }

    /// The host.
    pub(crate) fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// Who holds which token.
    pub(crate) fn tenants(&self) -> &Tenants {
        &self.tenants
    }

    /// The metrics (and the last hour they keep).
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Limits of request bodies.
    pub(crate) fn limits(&self) -> BodyLimits {
        self.limits
    }

    /// Jobs of `topics` that `filter` selects (a listing per topic, its
    /// `topic` replaced, merged), newest first, at most `filter.limit`
    /// (default 100).
    pub(crate) fn list_jobs(&self, topics: Vec<String>, filter: ListFilter) -> Result<Vec<JobRecord>, StoreError> {
        let limit = filter.limit.unwrap_or(100);
        let mut jobs = Vec::new();
        for topic in topics {
            let filter = ListFilter { topic: Some(topic), limit: Some(limit), ..filter.clone() };
            jobs.extend(self.host.jobs(&filter)?);
        }
        jobs.sort_by_key(|job| std::cmp::Reverse(job.id));
        jobs.truncate(limit);
        Ok(jobs)
    }

    /// The tenant owning `topic`, if it is `tenant`: anything else reads as
    /// an unknown topic.
    fn own_topic(&self, tenant: &str, topic: &str) -> Result<(), ApiError> {
        let owner = self.host.topics().find(|t| t.name() == topic).and_then(|t| t.tenant());
        if owner == Some(tenant) { Ok(()) } else { Err(ApiError::unknown_topic(topic)) }
    }

    /// The topics `tenant` owns.
    fn topics_of(&self, tenant: &str) -> Vec<String> {
        self.host.topics().filter(|t| t.tenant() == Some(tenant)).map(|t| t.name().to_owned()).collect()
    }
}

/// The API's routes: `/v1`, `/healthz` and `/metrics`.
pub fn routes(api: Arc<Api>) -> Router {
    let v1 = Router::new()
        .route("/topics/{topic}/jobs", post(jobs::enqueue))
        .route("/topics/{topic}/jobs/batch", post(jobs::enqueue_batch))
        .route("/topics", get(plugins::topics))
        .route("/topics/{topic}/plugins", get(plugins::versions).post(plugins::deploy))
        .route("/topics/{topic}/rollback", post(plugins::rollback))
        .route("/topics/{topic}/pause", post(plugins::pause))
        .route("/topics/{topic}/resume", post(plugins::resume))
        .route("/jobs", get(jobs::list))
        .route("/jobs/{id}", get(jobs::get))
        .route("/jobs/{id}/cancel", post(jobs::cancel))
        .route("/incidents", get(jobs::incidents))
        .route("/incidents/{id}/retry", post(jobs::retry))
        .route("/incidents/{id}/discard", post(jobs::discard))
        .route("/outcomes", get(outcomes::long_poll))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not-found", "no such endpoint") });
    Router::new().nest("/v1", v1).route("/healthz", get(healthz)).route("/metrics", get(metrics)).with_state(api)
}

/// The tenant a request's bearer token belongs to.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The tenant.
    pub tenant: String,
}

impl FromRequestParts<Arc<Api>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, api: &Arc<Api>) -> Result<Self, Self::Rejection> {
        let header = parts.headers.get(header::AUTHORIZATION).and_then(|h| h.to_str().ok());
        let Some(token) = header.and_then(|h| h.strip_prefix("Bearer ")).map(str::trim) else {
            return Err(ApiError::unauthorized("missing `Authorization: Bearer <token>`"));
        };
        match api.tenants.authenticate(token) {
            Some(tenant) => Ok(Caller { tenant: tenant.to_owned() }),
            None => Err(ApiError::unauthorized("unknown token")),
        }
    }
}

/// How much of a body over its limit is still read (and thrown away) so
/// that the client, still sending, gets the 413 instead of a reset
/// connection; past this the connection is closed.
const DRAIN_PAST_LIMIT: usize = 64 << 20;

/// Reads a request body of at most `limit` bytes. A larger one is refused
/// (413) after reading it to its end, up to [`DRAIN_PAST_LIMIT`] more
/// bytes: HTTP/1 clients send the whole body before they read the answer,
/// and a response sent before the body is read closes the connection under
/// them. Handlers read their body before any other refusal for the same
/// reason (a refused token, checked first, is the exception: its body is
/// not read).
async fn read_body(mut body: Body, limit: usize) -> Result<Vec<u8>, ApiError> {
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload-too-large",
            format!("the body is over {}", ByteSize(limit as u64)),
        )
    };
    let mut bytes = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("cannot read the body: {e}")))?;
        let Some(data) = frame.data_ref() else { continue };
        seen += data.len();
        if seen <= limit {
            bytes.extend_from_slice(data);
        } else if seen > limit.saturating_add(DRAIN_PAST_LIMIT) {
            return Err(too_large());
        }
    }
    if seen > limit { Err(too_large()) } else { Ok(bytes) }
}

/// Runs a blocking store call on tokio's blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, ApiError> + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| ApiError::internal(format!("request task failed: {e}")))?
}

async fn healthz(State(api): State<Arc<Api>>) -> Result<impl IntoResponse, ApiError> {
    let host = api.host.clone();
    // The cheapest read every store answers: proves the store is reachable.
    blocking(move || host.outcomes_after(u64::MAX, 1).map_err(ApiError::from)).await?;
    Ok(Json(serde_json::json!({ "status": "ok" })))
}

async fn metrics(State(api): State<Arc<Api>>) -> impl IntoResponse {
    let text = api.metrics.render(&api.host);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text)
}
