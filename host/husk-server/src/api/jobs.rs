//! Jobs: enqueue (with an idempotency key), get, cancel, list; incidents and
//! their retry.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Api, ApiError, Caller, blocking, read_body};
use husk::store::{CancelResult, DiscardResult, JobId, JobRecord, JobState, ListFilter, RetryIncidentResult};

/// The header carrying an idempotency key.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Longest idempotency key taken.
const MAX_KEY_LEN: usize = 200;

/// `POST /v1/topics/{topic}/jobs`: the body is the job's input (JSON). With
/// an `Idempotency-Key` header, the same key on the same topic returns the
/// same job (200) instead of enqueueing another (201).
pub(super) async fn enqueue(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    // The body first, even for a refusal: an HTTP/1 client sends all of it
    // before reading the answer (see `read_body`).
    let body = read_body(body, api.limits.input).await?;
    api.own_topic(&caller.tenant, &topic)?;
    serde_json::from_slice::<serde::de::IgnoredAny>(&body).map_err(|e| ApiError::malformed_json(&e))?;
    let key = idempotency_key(&headers)?.map(|key| format!("{}:{topic}/{key}", topic.len()));
    let enqueued = blocking(move || Ok((api.host.enqueue_keyed(&topic, body, key)?, topic))).await;
    let (enqueued, topic) = enqueued?;
    let status = if enqueued.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(json!({ "id": enqueued.id, "topic": topic, "created": enqueued.created }))))
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    let key = value.to_str().ok().filter(|k| !k.is_empty() && k.len() <= MAX_KEY_LEN && k.bytes().all(|b| b > b' '));
    match key {
        Some(key) => Ok(Some(key.to_owned())),
        None => {
            Err(ApiError::bad_request(format!("`Idempotency-Key` must be 1 to {MAX_KEY_LEN} visible ASCII characters")))
        }
    }
}

fn parse_id(id: &str) -> Result<JobId, ApiError> {
    id.parse().map(JobId).map_err(|_| ApiError::bad_request(format!("`{id}` is not a job id (a number)")))
}

/// The job `id` if it belongs to `tenant`; another tenant's job is
/// not found, exactly like a missing one.
fn own_job(api: &Api, tenant: &str, id: JobId) -> Result<JobRecord, ApiError> {
    let record = api.host.dispatcher().store().get(id)?.ok_or_else(|| ApiError::job_not_found(id))?;
    api.own_topic(tenant, &record.topic).map_err(|_| ApiError::job_not_found(id))?;
    Ok(record)
}

/// `GET /v1/jobs/{id}`: the job with its attempts, faults and outcome.
pub(super) async fn get(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<JobRecord>, ApiError> {
    let id = parse_id(&id)?;
    Ok(Json(blocking(move || own_job(&api, &caller.tenant, id)).await?))
}

/// `POST /v1/jobs/{id}/cancel`: a queued or gated job ends `Cancelled`; a
/// running one is interrupted at its next epoch tick.
pub(super) async fn cancel(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = parse_id(&id)?;
    blocking(move || {
        own_job(&api, &caller.tenant, id)?;
        let result = match api.host.cancel(id)? {
            CancelResult::Cancelled(_) => "cancelled",
            CancelResult::Cancelling => "cancelling",
            CancelResult::AlreadyEnded => "already-ended",
            CancelResult::NotFound => return Err(ApiError::job_not_found(id)),
        };
        Ok(Json(json!({ "id": id, "result": result })))
    })
    .await
}

/// Query of `GET /v1/jobs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    topic: Option<String>,
    state: Option<JobState>,
    limit: Option<usize>,
}

/// `GET /v1/jobs?topic=&state=&limit=`: the tenant's jobs, newest first
/// (default limit 100).
pub(super) async fn list(
    State(api): State<Arc<Api>>,
    caller: Caller,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let topics = match &query.topic {
        Some(topic) => {
            api.own_topic(&caller.tenant, topic)?;
            vec![topic.clone()]
        }
        None => api.topics_of(&caller.tenant),
    };
    let limit = query.limit.unwrap_or(100).min(10_000);
    blocking(move || {
        let mut jobs = Vec::new();
        for topic in topics {
            let filter = ListFilter { topic: Some(topic), state: query.state, limit: Some(limit) };
            jobs.extend(api.host.dispatcher().store().list(&filter)?);
        }
        jobs.sort_by_key(|job| std::cmp::Reverse(job.id));
        jobs.truncate(limit);
        Ok(Json(json!({ "jobs": jobs })))
    })
    .await
}

/// `GET /v1/incidents`: the tenant's open incidents.
pub(super) async fn incidents(State(api): State<Arc<Api>>, caller: Caller) -> Result<Json<Value>, ApiError> {
    blocking(move || {
        let topics = api.topics_of(&caller.tenant);
        let mut incidents = api.host.dispatcher().store().incidents()?;
        incidents.retain(|job| topics.contains(&job.topic));
        Ok(Json(json!({ "incidents": incidents })))
    })
    .await
}

/// `POST /v1/incidents/{id}/retry`: re-queues an incident with a fresh
/// attempt budget.
/// `POST /v1/incidents/{id}/discard`: closes an open incident without
/// retrying it (it leaves the incident list for good).
pub(super) async fn discard(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = parse_id(&id)?;
    blocking(move || {
        own_job(&api, &caller.tenant, id)?;
        match api.host.discard_incident(id)? {
            DiscardResult::Discarded => Ok(Json(json!({ "id": id, "result": "discarded" }))),
            DiscardResult::NotAnIncident => {
                Err(ApiError::new(StatusCode::CONFLICT, "not-an-incident", format!("job {id} is not an open incident")))
            }
            DiscardResult::NotFound => Err(ApiError::job_not_found(id)),
        }
    })
    .await
}

pub(super) async fn retry(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = parse_id(&id)?;
    blocking(move || {
        own_job(&api, &caller.tenant, id)?;
        match api.host.dispatcher().retry_incident(id)? {
            RetryIncidentResult::Requeued => Ok(Json(json!({ "id": id, "result": "requeued" }))),
            RetryIncidentResult::NotAnIncident => {
                Err(ApiError::new(StatusCode::CONFLICT, "not-an-incident", format!("job {id} is not an open incident")))
            }
            RetryIncidentResult::NotFound => Err(ApiError::job_not_found(id)),
        }
    })
    .await
}
