//! The HTTP API of `husk serve` (axum): JSON under `/v1`, bearer tokens per
//! tenant, plus `/healthz` and `/metrics` ([`crate::router`] adds the
//! dashboard under `/ui`).
//!
//! Every refusal is a specific 4xx with a JSON body `{"error": kind,
//! "message": text}` (see [`ApiError`]); a refused request changes nothing.
//! The bodies are the types of [`model`]; the OpenAPI document generated
//! from them and the handlers is served at `/v1/openapi.json`.
//! A tenant sees only its own topics and jobs: anything else is 404, exactly
//! as if it did not exist. Store calls block, so they run on tokio's
//! blocking pool, never on the threads serving connections.

mod contract;
mod errors;
mod jobs;
pub mod model;
mod outcomes;
mod plugins;
mod schedule;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequestParts, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use bytesize::ByteSize;
use http_body_util::BodyExt;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use contract::document;
pub use errors::{ApiError, ErrorKind};
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

    /// The topics a request of `tenant` asks for: `topic` if it is the
    /// tenant's, else every topic of the tenant's.
    fn topics_asked(&self, tenant: &str, topic: Option<&str>) -> Result<Vec<String>, ApiError> {
        match topic {
            Some(topic) => self.own_topic(tenant, topic).map(|()| vec![topic.to_owned()]),
            None => Ok(self.topics_of(tenant)),
        }
    }

    /// The topics `tenant` owns.
    fn topics_of(&self, tenant: &str) -> Vec<String> {
        self.host.topics().filter(|t| t.tenant() == Some(tenant)).map(|t| t.name().to_owned()).collect()
    }
}

/// The API's routes and its OpenAPI document, made from the same handlers:
/// `/v1` (with `/v1/openapi.json`), `/healthz` and `/metrics`.
pub fn routes(api: Arc<Api>) -> Router {
    let (v1, doc) = v1().split_for_parts();
    let doc = contract::json(&contract::finish(doc));
    // Serialized once; each answer shares the bytes.
    let doc = axum::body::Bytes::from(serde_json::to_string_pretty(&doc).expect("the document serializes"));
    let v1 = v1
        .route("/openapi.json", get(move || async move { ([(header::CONTENT_TYPE, "application/json")], doc) }))
        .fallback(|| async { ApiError::new(ErrorKind::NotFound, "no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(ErrorKind::MethodNotAllowed, "the endpoint does not take this method (see /v1/openapi.json)")
        });
    Router::new().nest("/v1", v1).route("/healthz", get(healthz)).route("/metrics", get(metrics)).with_state(api)
}

/// The `/v1` routes, each with its part of the document.
fn v1() -> OpenApiRouter<Arc<Api>> {
    OpenApiRouter::new()
        .routes(routes!(jobs::enqueue))
        .routes(routes!(jobs::enqueue_batch))
        .routes(routes!(jobs::list))
        .routes(routes!(jobs::get))
        .routes(routes!(jobs::cancel))
        .routes(routes!(jobs::incidents))
        .routes(routes!(jobs::retry))
        .routes(routes!(jobs::discard))
        .routes(routes!(outcomes::long_poll))
        .routes(routes!(plugins::topics))
        .routes(routes!(plugins::versions, plugins::deploy))
        .routes(routes!(plugins::rollback))
        .routes(routes!(plugins::pause))
        .routes(routes!(plugins::resume))
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
            None if api.tenants.principal(token).is_some() => Err(ApiError::unauthorized(
                "this token signs in to the dashboard only (an operator's or a read-only one): \
                 the API takes a tenant's token",
            )),
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
    let too_large =
        || ApiError::new(ErrorKind::PayloadTooLarge, format!("the body is over {}", ByteSize(limit as u64)));
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

/// Whether the server and its store answer (no token needed).
#[utoipa::path(
    get, path = "/healthz", tag = "health", security(()),
    responses(
        (status = 200, body = model::Health),
        (status = 500, body = ApiError), (status = 503, description = "The store is unreachable.", body = ApiError),
    ),
)]
pub(crate) async fn healthz(State(api): State<Arc<Api>>) -> Result<Json<model::Health>, ApiError> {
    let host = api.host.clone();
    // The cheapest read every store answers: proves the store is reachable.
    blocking(move || host.outcomes_after(u64::MAX, 1).map_err(ApiError::from)).await?;
    Ok(Json(model::Health { status: "ok".into() }))
}

async fn metrics(State(api): State<Arc<Api>>) -> impl IntoResponse {
    let text = api.metrics.render(&api.host);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text)
}
