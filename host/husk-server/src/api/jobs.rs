//! Jobs: enqueue (with an idempotency key), get, cancel, list; incidents and
//! their retry.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

use bytesize::ByteSize;

use super::model::{
    BatchEnqueued, BatchJobEnqueued, CancelResult, Cancelled, Enqueued, IncidentAction, IncidentList, IncidentResult,
    Job, JobList, JobStatus,
};
use super::schedule::{EnqueueQuery, priority_of, start_of};
use super::{Api, ApiError, Caller, ErrorKind, blocking, model, read_body};
use husk::outcome::OutcomeKind;
use husk::store::{self, DiscardResult, JobId, JobRecord, ListFilter, RetryIncidentResult};
use husk::{Enqueue, EnqueueJob};

/// The header carrying an idempotency key.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Longest idempotency key taken.
const MAX_KEY_LEN: usize = 200;

/// Most jobs on one page of a listing.
const MAX_PAGE: usize = 10_000;

/// Most jobs in one batch enqueue.
pub(super) const MAX_BATCH_JOBS: usize = 10_000;

/// Enqueues a job: the body is its input (any JSON). With an
/// `Idempotency-Key` header, the same key on the same topic returns the same
/// job (200) instead of enqueueing another (201). With `run_at` or `delay`
/// the job is `scheduled` until then; `priority` orders it among its
/// topic's ready jobs.
#[utoipa::path(
    post, path = "/topics/{topic}/jobs", tag = "jobs",
    params(
        ("topic" = String, Path, description = "The topic."),
        EnqueueQuery,
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 200, pattern = "^[!-~]+$",
            description = "Visible ASCII: the same key on the same topic names the same job."),
    ),
    request_body(content = serde_json::Value, content_type = "application/json", description = "The job's input."),
    responses(
        (status = 201, description = "Enqueued.", body = Enqueued, links(
            ("GetJob" = (operation_id = "get", parameters(("id" = "$response.body#/id")))),
            ("CancelJob" = (operation_id = "cancel", parameters(("id" = "$response.body#/id")))),
        )),
        (status = 200, description = "The key named a job enqueued before.", body = Enqueued),
        (status = 400, description = "`malformed-json` or `bad-request` (the key, `run_at`, `delay`, `priority`).", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 413, body = ApiError), (status = 429, description = "`quota-exceeded`.", body = ApiError),
        (status = 409, description = "`store-conflict`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn enqueue(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
    query: Result<Query<EnqueueQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Enqueued>), ApiError> {
    // The body first, even for a refusal: an HTTP/1 client sends all of it
    // before reading the answer (see `read_body`).
    let body = read_body(body, api.limits.input).await?;
    api.own_topic(&caller.tenant, &topic)?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let start = start_of(query.run_at.as_deref(), query.delay.as_deref(), SystemTime::now(), "the job")?;
    let priority = priority_of(query.priority, "the job")?;
    serde_json::from_slice::<serde::de::IgnoredAny>(&body).map_err(|e| ApiError::body(&e, "a job's input"))?;
    let key = idempotency_key(&headers)?.map(|key| topic_key(&topic, key));
    let job = EnqueueJob { input: body.to_vec(), key, not_before: start, priority };
    // Where it can, no thread waits for the store's commit.
    let enqueued = api.host.submit_async(Enqueue::jobs(topic.clone(), vec![job])).await?.remove(0);
    let status = if enqueued.created { StatusCode::CREATED } else { StatusCode::OK };
    let run_at = start.filter(|_| enqueued.created).map(model::time);
    Ok((status, Json(Enqueued { id: enqueued.id.0, topic, created: enqueued.created, run_at })))
}

/// A batch's body in the document: an array of 1 to [`MAX_BATCH_JOBS`]
/// jobs (read as `Vec<BatchJob>`).
pub(super) struct Batch;

impl utoipa::PartialSchema for Batch {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ArrayBuilder::new()
            .items(utoipa::openapi::Ref::from_schema_name(BatchJob::name()))
            .min_items(Some(1))
            .max_items(Some(MAX_BATCH_JOBS))
            .into()
    }
}

impl ToSchema for Batch {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        schemas.push((BatchJob::name().into_owned(), <BatchJob<'_> as utoipa::PartialSchema>::schema()));
    }
}

/// One job of a batch enqueue.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct BatchJob<'a> {
    /// Its input (any JSON).
    #[serde(borrow)]
    #[schema(value_type = serde_json::Value)]
    input: &'a RawValue,
    /// An idempotency key, as the `Idempotency-Key` header of a single
    /// enqueue.
    #[serde(default)]
    #[serde(borrow)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 200, pattern = "^[!-~]+$")]
    key: Option<Cow<'a, str>>,
    /// Not before this time (RFC 3339), as a single enqueue's `run_at`.
    #[serde(default)]
    #[serde(borrow)]
    #[schema(value_type = Option<String>, format = DateTime, example = "2026-12-03T08:30:00Z")]
    run_at: Option<Cow<'a, str>>,
    /// Not before this long from now, as a single enqueue's `delay`.
    #[serde(default)]
    #[serde(borrow)]
    #[schema(value_type = Option<String>, pattern = r"^([0-9]{1,5} ?(ms|s|m|h|d|w) ?)+$", example = "1h 30m")]
    delay: Option<Cow<'a, str>>,
    /// Its priority within the topic, as a single enqueue's `priority`.
    #[serde(default)]
    #[schema(minimum = -100, maximum = 100)]
    priority: Option<i64>,
}

/// Enqueues a batch: 1 to 10,000 jobs in one transaction, all or none (a
/// bad job, or a batch that would take the tenant past its `max_queued`,
/// enqueues nothing). A key works as the `Idempotency-Key` header does,
/// across batches and within one (a repeat names the first job); `run_at`
/// or `delay` schedules a job as they do on a single enqueue.
#[utoipa::path(
    post, path = "/topics/{topic}/jobs/batch", tag = "jobs",
    params(("topic" = String, Path, description = "The topic.")),
    request_body(content = Batch, content_type = "application/json"),
    responses(
        (status = 201, description = "At least one job was created.", body = BatchEnqueued),
        (status = 200, description = "Every key named a job enqueued before.", body = BatchEnqueued),
        (status = 400, description = "`malformed-json`, `invalid-body` or `bad-request` (an empty batch, a bad key, `run_at`, `delay` or `priority`).", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 413, body = ApiError), (status = 429, description = "`quota-exceeded`.", body = ApiError),
        (status = 409, description = "`store-conflict`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn enqueue_batch(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
    body: Body,
) -> Result<(StatusCode, Json<BatchEnqueued>), ApiError> {
    let body = read_body(body, api.limits.batch).await?;
    api.own_topic(&caller.tenant, &topic)?;
    let items: Vec<&RawValue> = serde_json::from_slice(&body).map_err(|e| ApiError::body(&e, "an array of jobs"))?;
    let batch = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            // Objects only: serde would also read a job from an array of its fields.
            if !item.get().starts_with('{') {
                return Err(ApiError::new(ErrorKind::InvalidBody, format!("job {i} is not an object")));
            }
            serde_json::from_str::<BatchJob<'_>>(item.get()).map_err(|e| ApiError::body(&e, &format!("job {i}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if batch.is_empty() || batch.len() > MAX_BATCH_JOBS {
        return Err(ApiError::bad_request(format!("a batch holds 1 to {MAX_BATCH_JOBS} jobs, not {}", batch.len())));
    }
    let mut jobs = Vec::with_capacity(batch.len());
    let now = SystemTime::now();
    for (i, job) in batch.iter().enumerate() {
        let input = job.input.get().as_bytes();
        if input.len() > api.limits.input {
            let message = format!("job {i}'s input is over {}", ByteSize(api.limits.input as u64));
            return Err(ApiError::new(ErrorKind::PayloadTooLarge, message));
        }
        let key = match job.key.as_deref() {
            Some(key) => Some(topic_key(&topic, valid_key(key).ok_or_else(|| bad_key(&format!("job {i}'s `key`")))?)),
            None => None,
        };
        let not_before = start_of(job.run_at.as_deref(), job.delay.as_deref(), now, &format!("job {i}"))?;
        let priority = priority_of(job.priority, &format!("job {i}"))?;
        jobs.push(EnqueueJob { input: input.to_vec(), key, not_before, priority });
    }
    let enqueued = api.host.submit_async(Enqueue::jobs(topic.clone(), jobs)).await?;
    let created = enqueued.iter().filter(|e| e.created).count();
    let status = if created > 0 { StatusCode::CREATED } else { StatusCode::OK };
    let jobs = enqueued.iter().map(|e| BatchJobEnqueued { id: e.id.0, created: e.created }).collect();
    Ok((status, Json(BatchEnqueued { topic, created, jobs })))
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

/// A job id from a request: the stores keep ids as signed 64-bit numbers.
fn parse_id(id: &str) -> Result<JobId, ApiError> {
    id.parse::<i64>().map_err(|_| ApiError::bad_request(format!("`{id}` is not a job id (a number)"))).and_then(job_id)
}

fn job_id(id: i64) -> Result<JobId, ApiError> {
    u64::try_from(id).map(JobId).map_err(|_| ApiError::bad_request(format!("`{id}` is not a job id (0 or more)")))
}

/// The job `id` if it belongs to `tenant`; another tenant's job is
/// not found, exactly like a missing one.
fn own_job(api: &Api, tenant: &str, id: JobId) -> Result<JobRecord, ApiError> {
    let record = api.host.job(id)?.ok_or_else(|| ApiError::job_not_found(id))?;
    api.own_topic(tenant, &record.topic).map_err(|_| ApiError::job_not_found(id))?;
    Ok(record)
}

/// A job with its attempts, faults and outcome.
#[utoipa::path(
    get, path = "/jobs/{id}", tag = "jobs",
    params(("id" = u64, Path, description = "The job's id.")),
    responses(
        (status = 200, body = Job),
        (status = 400, description = "`bad-request`: not a job id.", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`not-found`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn get(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Job>, ApiError> {
    let id = parse_id(&id)?;
    let (record, input) = blocking(move || {
        let record = own_job(&api, &caller.tenant, id)?;
        Ok((record, api.host.input(id)?))
    })
    .await?;
    Ok(Json(Job { input: input.as_deref().map(husk::wire::body_value), ..Job::from(&record) }))
}

/// Cancels a job: a waiting one ends `cancelled`; a running one is
/// interrupted at its next epoch tick.
#[utoipa::path(
    post, path = "/jobs/{id}/cancel", tag = "jobs",
    params(("id" = u64, Path, description = "The job's id.")),
    responses(
        (status = 200, body = Cancelled),
        (status = 400, description = "`bad-request`: not a job id.", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`not-found`.", body = ApiError),
        (status = 409, description = "`store-conflict`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn cancel(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Cancelled>, ApiError> {
    let id = parse_id(&id)?;
    blocking(move || {
        own_job(&api, &caller.tenant, id)?;
        let result = match api.host.cancel(id)? {
            store::CancelResult::Cancelled(_) => CancelResult::Cancelled,
            store::CancelResult::Cancelling => CancelResult::Cancelling,
            store::CancelResult::AlreadyEnded => CancelResult::AlreadyEnded,
            store::CancelResult::NotFound => return Err(ApiError::job_not_found(id)),
        };
        Ok(Json(Cancelled { id: id.0, result }))
    })
    .await
}

/// Query of `GET /v1/jobs`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only this topic's jobs.
    topic: Option<String>,
    /// Only jobs in this state.
    #[param(value_type = Option<JobStatus>)]
    state: Option<String>,
    /// Only ended jobs that ended so (`completed`, `business-error`,
    /// `business-status`, `failed`, `cancelled`).
    #[param(value_type = Option<super::model::OutcomeName>)]
    outcome: Option<String>,
    /// Only jobs enqueued at or after this time (RFC 3339, UTC; seconds and
    /// zone optional).
    #[param(format = DateTime)]
    enqueued_after: Option<String>,
    /// Only jobs enqueued before this time.
    #[param(format = DateTime)]
    enqueued_before: Option<String>,
    /// Only jobs whose last fault's code contains this text.
    fault_code: Option<String>,
    /// At most this many (default 100, at most 10,000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Only jobs older than this job: the next page after a page that ended
    /// with it.
    #[param(minimum = 0)]
    before: Option<i64>,
}

/// A time in a query: RFC 3339 (`2026-12-03T08:30:15Z`,
/// `2026-12-03T09:30:15.5+01:00`), or without a zone, in UTC, seconds
/// optional (`2026-12-03T08:30`), as a `datetime-local` input sends it.
pub(crate) fn parse_time(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    if let Ok(at) = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339) {
        return Ok(at.into());
    }
    let whole = if text.len() == 16 { format!("{text}:00") } else { text.to_owned() };
    humantime::parse_rfc3339_weak(&whole).map_err(|e| format!("`{text}` is not a time like 2026-12-03T08:30:00Z: {e}"))
}

/// The tenant's jobs, newest first, filtered.
#[utoipa::path(
    get, path = "/jobs", tag = "jobs",
    params(ListQuery),
    responses(
        (status = 200, body = JobList),
        (status = 400, description = "`bad-request`: a bad filter.", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn list(
    State(api): State<Arc<Api>>,
    caller: Caller,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<JobList>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let topics = api.topics_asked(&caller.tenant, query.topic.as_deref())?;
    let time = |name: &str, text: &Option<String>| {
        text.as_deref().map(parse_time).transpose().map_err(|e| ApiError::bad_request(format!("{name}: {e}")))
    };
    let status: Option<JobStatus> =
        query.state.as_deref().map(str::parse).transpose().map_err(|e: String| ApiError::bad_request(e))?;
    let outcome: Option<OutcomeKind> =
        query.outcome.as_deref().map(str::parse).transpose().map_err(|e: String| ApiError::bad_request(e))?;
    let Some(by_state) = JobStatus::list_filter(status, outcome) else {
        // A state and an outcome that contradict each other: no job.
        return Ok(Json(JobList { jobs: Vec::new() }));
    };
    let limit = match query.limit {
        Some(limit @ 1..=MAX_PAGE) => limit,
        Some(other) => return Err(ApiError::bad_request(format!("limit: 1 to {MAX_PAGE}, not {other}"))),
        None => 100,
    };
    let filter = ListFilter {
        enqueued_after: time("enqueued_after", &query.enqueued_after)?,
        enqueued_before: time("enqueued_before", &query.enqueued_before)?,
        fault_code: query.fault_code.filter(|code| !code.is_empty()),
        limit: Some(limit),
        before: query.before.map(job_id).transpose()?,
        topic: None,
        ..by_state
    };
    blocking(move || {
        let jobs = api.list_jobs(topics, filter)?;
        Ok(Json(JobList { jobs: jobs.iter().map(Job::from).collect() }))
    })
    .await
}

/// Query of `GET /v1/incidents`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct IncidentsQuery {
    /// Only this topic's incidents.
    topic: Option<String>,
}

/// The tenant's open incidents.
#[utoipa::path(
    get, path = "/incidents", tag = "incidents",
    params(IncidentsQuery),
    responses(
        (status = 200, body = IncidentList, links(
            ("RetryIncident" = (operation_id = "retry", parameters(("id" = "$response.body#/incidents/0/id")))),
            ("DiscardIncident" = (operation_id = "discard", parameters(("id" = "$response.body#/incidents/0/id")))),
        )),
        (status = 400, description = "`bad-request`: a bad query.", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn incidents(
    State(api): State<Arc<Api>>,
    caller: Caller,
    query: Result<Query<IncidentsQuery>, QueryRejection>,
) -> Result<Json<IncidentList>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let topics = api.topics_asked(&caller.tenant, query.topic.as_deref())?;
    blocking(move || {
        let mut incidents = api.host.incidents()?;
        incidents.retain(|job| topics.contains(&job.topic));
        Ok(Json(IncidentList { incidents: incidents.iter().map(Job::from).collect() }))
    })
    .await
}

/// Closes an open incident without retrying it (it leaves the incident
/// list for good).
#[utoipa::path(
    post, path = "/incidents/{id}/discard", tag = "incidents",
    params(("id" = u64, Path, description = "The job's id.")),
    responses(
        (status = 200, body = IncidentAction),
        (status = 400, description = "`bad-request`: not a job id.", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`not-found`.", body = ApiError),
        (status = 409, description = "`not-an-incident` or `store-conflict`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn discard(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<IncidentAction>, ApiError> {
    let id = parse_id(&id)?;
    blocking(move || {
        own_job(&api, &caller.tenant, id)?;
        match api.host.discard_incident(id)? {
            DiscardResult::Discarded => Ok(Json(IncidentAction { id: id.0, result: IncidentResult::Discarded })),
            DiscardResult::NotAnIncident => Err(not_an_incident(id)),
            DiscardResult::NotFound => Err(ApiError::job_not_found(id)),
        }
    })
    .await
}

fn not_an_incident(id: JobId) -> ApiError {
    ApiError::new(ErrorKind::NotAnIncident, format!("job {id} is not an open incident"))
}

/// Queues an incident again with a fresh attempt budget.
#[utoipa::path(
    post, path = "/incidents/{id}/retry", tag = "incidents",
    params(("id" = u64, Path, description = "The job's id.")),
    responses(
        (status = 200, body = IncidentAction),
        (status = 400, description = "`bad-request`: not a job id.", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`not-found`.", body = ApiError),
        (status = 409, description = "`not-an-incident` or `store-conflict`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn retry(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<IncidentAction>, ApiError> {
    let id = parse_id(&id)?;
    blocking(move || {
        own_job(&api, &caller.tenant, id)?;
        match api.host.retry_incident(id)? {
            RetryIncidentResult::Requeued => Ok(Json(IncidentAction { id: id.0, result: IncidentResult::Requeued })),
            RetryIncidentResult::NotAnIncident => Err(not_an_incident(id)),
            RetryIncidentResult::NotFound => Err(ApiError::job_not_found(id)),
        }
    })
    .await
}
