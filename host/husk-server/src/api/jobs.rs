//! Jobs: enqueue (with an idempotency key), get, cancel, list; incidents and
//! their retry.

use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use bytesize::ByteSize;

use super::{Api, ApiError, Caller, blocking, read_body};
use husk::Enqueue;
use husk::outcome::OutcomeKind;
use husk::store::{CancelResult, DiscardResult, JobId, JobRecord, JobState, ListFilter, RetryIncidentResult};

/// The header carrying an idempotency key.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Longest idempotency key taken.
const MAX_KEY_LEN: usize = 200;

/// Most jobs in one batch enqueue.
pub(super) const MAX_BATCH_JOBS: usize = 10_000;

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
    let key = idempotency_key(&headers)?.map(|key| topic_key(&topic, key));
    // Where it can, no thread waits for the store's commit.
    let enqueued = api.host.submit_async(Enqueue::keyed(topic.clone(), body, key)).await?.remove(0);
    let status = if enqueued.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(json!({ "id": enqueued.id, "topic": topic, "created": enqueued.created }))))
}

/// One job of a batch enqueue: its input (any JSON) and an optional
/// idempotency key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchJob<'a> {
    #[serde(borrow)]
    input: &'a RawValue,
    #[serde(default)]
    key: Option<&'a str>,
}

/// `POST /v1/topics/{topic}/jobs/batch`: the body is a JSON array of jobs,
/// `{"input": …, "key": "…"}` (key optional), 1 to [`MAX_BATCH_JOBS`] of
/// them, enqueued in one transaction, all or none: a bad job, or a batch
/// that would take the tenant past its `max_queued`, enqueues nothing. A
/// key works as the `Idempotency-Key` header does, across batches and
/// within one (a repeat names the first job). 201 when any job was created,
/// else 200; the body lists `{"id", "created"}` per job, in order.
pub(super) async fn enqueue_batch(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = read_body(body, api.limits.batch).await?;
    api.own_topic(&caller.tenant, &topic)?;
    let batch: Vec<BatchJob<'_>> = serde_json::from_slice(&body).map_err(|e| ApiError::malformed_json(&e))?;
    if batch.is_empty() || batch.len() > MAX_BATCH_JOBS {
        return Err(ApiError::bad_request(format!("a batch holds 1 to {MAX_BATCH_JOBS} jobs, not {}", batch.len())));
    }
    let mut jobs = Vec::with_capacity(batch.len());
    for (i, job) in batch.iter().enumerate() {
        let input = job.input.get().as_bytes();
        if input.len() > api.limits.input {
            let message = format!("job {i}'s input is over {}", ByteSize(api.limits.input as u64));
            return Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large", message));
        }
        let key = match job.key {
            Some(key) => Some(topic_key(&topic, valid_key(key).ok_or_else(|| bad_key(&format!("job {i}'s `key`")))?)),
            None => None,
        };
        jobs.push((input.to_vec(), key));
    }
    let enqueued = api.host.submit_async(Enqueue::batch(topic.clone(), jobs)).await?;
    let created = enqueued.iter().filter(|e| e.created).count();
    let status = if created > 0 { StatusCode::CREATED } else { StatusCode::OK };
    let jobs: Vec<Value> = enqueued.iter().map(|e| json!({ "id": e.id, "created": e.created })).collect();
    Ok((status, Json(json!({ "topic": topic, "created": created, "jobs": jobs }))))
}

/// An idempotency key as the store keeps it: scoped to its topic.
fn topic_key(topic: &str, key: &str) -> String {
    format!("{}:{topic}/{key}", topic.len())
}

/// `key` if it is 1 to [`MAX_KEY_LEN`] visible ASCII characters.
fn valid_key(key: &str) -> Option<&str> {
    Some(key).filter(|k| !k.is_empty() && k.len() <= MAX_KEY_LEN && k.bytes().all(|b| b > b' ' && b < 0x7f))
}

fn bad_key(what: &str) -> ApiError {
    ApiError::bad_request(format!("{what} must be 1 to {MAX_KEY_LEN} visible ASCII characters"))
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    value.to_str().ok().and_then(valid_key).map(Some).ok_or_else(|| bad_key("`Idempotency-Key`"))
}

fn parse_id(id: &str) -> Result<JobId, ApiError> {
    id.parse().map(JobId).map_err(|_| ApiError::bad_request(format!("`{id}` is not a job id (a number)")))
}

/// The job `id` if it belongs to `tenant`; another tenant's job is
/// not found, exactly like a missing one.
fn own_job(api: &Api, tenant: &str, id: JobId) -> Result<JobRecord, ApiError> {
    let record = api.host.job(id)?.ok_or_else(|| ApiError::job_not_found(id))?;
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
    outcome: Option<OutcomeKind>,
    enqueued_after: Option<String>,
    enqueued_before: Option<String>,
    fault_code: Option<String>,
    limit: Option<usize>,
    before: Option<u64>,
}

/// A time in a query: RFC 3339 in UTC, seconds and zone optional
/// (`2026-12-03T08:30`, `2026-12-03T08:30:15Z`), as a `datetime-local`
/// input sends it.
pub(crate) fn parse_time(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    let whole = if text.len() == 16 { format!("{text}:00") } else { text.to_owned() };
    humantime::parse_rfc3339_weak(&whole).map_err(|e| format!("`{text}` is not a time like 2026-12-03T08:30:00Z: {e}"))
}

/// `GET /v1/jobs?topic=&state=&outcome=&enqueued_after=&enqueued_before=&fault_code=&limit=&before=`:
/// the tenant's jobs, newest first (default limit 100), older than job
/// `before` if given (the next page); `outcome` is a kind (`completed`,
/// `failed`, …), the times RFC 3339 (after inclusive, before exclusive),
/// `fault_code` text the last fault's code contains.
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
    let time = |name: &str, text: &Option<String>| {
        text.as_deref().map(parse_time).transpose().map_err(|e| ApiError::bad_request(format!("{name}: {e}")))
    };
    let filter = ListFilter {
        state: query.state,
        outcome: query.outcome,
        enqueued_after: time("enqueued_after", &query.enqueued_after)?,
        enqueued_before: time("enqueued_before", &query.enqueued_before)?,
        fault_code: query.fault_code.filter(|code| !code.is_empty()),
        limit: Some(query.limit.unwrap_or(100).min(10_000)),
        before: query.before.map(JobId),
        topic: None,
    };
    blocking(move || {
        let jobs = api.list_jobs(topics, filter)?;
        Ok(Json(json!({ "jobs": jobs })))
    })
    .await
}

/// `GET /v1/incidents`: the tenant's open incidents.
pub(super) async fn incidents(State(api): State<Arc<Api>>, caller: Caller) -> Result<Json<Value>, ApiError> {
    blocking(move || {
        let topics = api.topics_of(&caller.tenant);
        let mut incidents = api.host.incidents()?;
        incidents.retain(|job| topics.contains(&job.topic));
        Ok(Json(json!({ "incidents": incidents })))
    })
    .await
}

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

/// `POST /v1/incidents/{id}/retry`: re-queues an incident with a fresh
/// attempt budget.
pub(super) async fn retry(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = parse_id(&id)?;
    blocking(move || {
        own_job(&api, &caller.tenant, id)?;
        match api.host.retry_incident(id)? {
            RetryIncidentResult::Requeued => Ok(Json(json!({ "id": id, "result": "requeued" }))),
            RetryIncidentResult::NotAnIncident => {
                Err(ApiError::new(StatusCode::CONFLICT, "not-an-incident", format!("job {id} is not an open incident")))
            }
            RetryIncidentResult::NotFound => Err(ApiError::job_not_found(id)),
        }
    })
    .await
}
