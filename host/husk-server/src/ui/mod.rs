//! The operator's dashboard, served by `husk serve` under `/ui` on the API's
//! port: server-rendered HTML (maud) with htmx and one stylesheet, all in
//! the binary.
//!
//! Sign-in takes a token in a form (a tenant's API token, a tenant's
//! read-only token, or an operator token) and opens a session held in an
//! `HttpOnly`, `SameSite=Strict` cookie; tokens never appear in a URL. A
//! tenant sees only its own topics and jobs, exactly as the API (anything
//! else is "not found"); an operator sees every tenant's. A read-only
//! session gets no button, and every change it posts is refused (403).
//! Every state-changing request carries the session's CSRF token. maud
//! escapes everything rendered from job data, and the pages are served with
//! a Content-Security-Policy that runs no inline script.

mod pages;
mod session;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Form, Multipart, Path, Query, RawForm, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use husk::host::PluginSource;
use husk::store::{CancelResult, DiscardResult, JobId, JobRecord, JobState, ListFilter, RetryIncidentResult};

use crate::api::Api;
use crate::tokens::Scope;
use husk::versions::Origin;
pub(crate) use session::{Session, Sessions};

/// The stylesheet.
const CSS: &str = include_str!("../../assets/husk.css");
/// htmx 2.0.11 (Zero-Clause BSD), as published on npm as `htmx.org`.
const HTMX: &str = include_str!("../../assets/htmx.min.js");

/// No inline script or style, nothing from elsewhere, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What the dashboard's handlers share.
#[derive(Debug)]
pub(crate) struct Ui {
    api: Arc<Api>,
    sessions: Sessions,
}

/// The dashboard's routes, to nest under `/ui`.
pub(crate) fn router(api: Arc<Api>) -> Router {
    // A component within the API's limit, plus the form's own fields.
    let upload_limit = api.limits().plugin + (64 << 10);
    let ui = Arc::new(Ui { api, sessions: Sessions::default() });
    Router::new()
        .route("/", get(overview))
        .route("/overview", get(overview_fragment))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/jobs", get(jobs))
        .route("/jobs/rows", get(job_rows))
        .route("/jobs/{id}", get(job))
        .route("/jobs/{id}/{action}", post(act))
        .route("/incidents", get(incidents))
        .route("/incidents/bulk", post(bulk))
        .route("/topics/{topic}", get(topic))
        .route("/topics/{topic}/pause", post(pause))
        .route("/topics/{topic}/resume", post(resume))
        .route("/topics/{topic}/rollback", post(rollback))
        .route("/topics/{topic}/deploy", post(deploy).layer(DefaultBodyLimit::max(upload_limit)))
        .route("/assets/husk.css", get(|| async { asset(CSS, "text/css; charset=utf-8") }))
        .route("/assets/htmx.min.js", get(|| async { asset(HTMX, "text/javascript; charset=utf-8") }))
        .layer(axum::middleware::map_response(secure_headers))
        .with_state(ui)
}

async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// A page or a refusal.
type Page = Result<Response, Refusal>;

/// Why a request gets no page of its own.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Not signed in: to the sign-in form.
    SignIn,
    /// A page saying why, with its status.
    Page(StatusCode, maud::Markup),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::SignIn => Redirect::to("/ui/login").into_response(),
            Refusal::Page(status, page) => (status, page).into_response(),
        }
    }
}

/// The request's session, or the way to sign in.
fn signed_in(ui: &Ui, headers: &HeaderMap) -> Result<Session, Refusal> {
    ui.sessions.of(headers).ok_or(Refusal::SignIn)
}

/// A refusal page with `status`.
fn refusal(status: StatusCode, message: &str) -> Refusal {
    Refusal::Page(status, pages::message(status, message))
}

/// Runs a blocking store call off the connection threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Refusal> + Send + 'static) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| refusal(StatusCode::INTERNAL_SERVER_ERROR, &format!("request task failed: {e}")))?
}

fn store_failed(error: husk::store::StoreError) -> Refusal {
    let status = if error.is_retryable() { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::INTERNAL_SERVER_ERROR };
    refusal(status, &error.to_string())
}

impl Ui {
    /// The topics `session` sees, sorted.
    fn topics_of(&self, session: &Session) -> Vec<String> {
        let mut topics: Vec<String> = self
            .api
            .host()
            .topics()
            .filter(|t| match &session.principal.scope {
                Scope::Operator => true,
                Scope::Tenant(tenant) => t.tenant() == Some(tenant.as_str()),
            })
            .map(|t| t.name().to_owned())
            .collect();
        topics.sort();
        topics
    }

    /// `topic` if `session` sees it; else "not found", as for a missing one.
    fn topic_of(&self, session: &Session, topic: &str) -> Result<(), Refusal> {
        if self.topics_of(session).iter().any(|t| t == topic) {
            Ok(())
        } else {
            Err(refusal(StatusCode::NOT_FOUND, &format!("no topic `{topic}`")))
        }
    }

    /// Job `id` if `session` sees it; else "not found", as for a missing one.
    fn job_of(&self, session: &Session, id: JobId) -> Result<JobRecord, Refusal> {
        let not_found = || refusal(StatusCode::NOT_FOUND, &format!("no job {id}"));
        let record = self.api.host().dispatcher().store().get(id).map_err(store_failed)?.ok_or_else(not_found)?;
        if self.topics_of(session).contains(&record.topic) { Ok(record) } else { Err(not_found()) }
    }
}

async fn login_form() -> Response {
    pages::login(None).into_response()
}

/// The sign-in form's fields.
#[derive(Deserialize)]
struct Login {
    token: String,
}

async fn login(State(ui): State<Arc<Ui>>, Form(form): Form<Login>) -> Page {
    let Some(principal) = ui.api.tenants().principal(form.token.trim()) else {
        return Err(Refusal::Page(StatusCode::UNAUTHORIZED, pages::login(Some("Unknown token."))));
    };
    let id = ui.sessions.open(principal).map_err(|e| refusal(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))?;
    Ok(([(header::SET_COOKIE, session::set_cookie(Some(&id)))], Redirect::to("/ui")).into_response())
}

/// A form that only carries the CSRF token.
#[derive(Deserialize)]
struct Csrf {
    csrf: String,
}

async fn logout(State(ui): State<Arc<Ui>>, headers: HeaderMap, Form(form): Form<Csrf>) -> Page {
    let session = signed_in(&ui, &headers)?;
    if !session::csrf_matches(&session, &form.csrf) {
        return Err(refusal(StatusCode::FORBIDDEN, "This form has expired: reload the page and try again."));
    }
    ui.sessions.close(&headers);
    Ok(([(header::SET_COOKIE, session::set_cookie(None))], Redirect::to("/ui/login")).into_response())
}

/// What the overview shows, gathered off the connection threads.
fn overview_of(ui: &Ui, session: &Session) -> Result<pages::Overview, Refusal> {
    let host = ui.api.host();
    let topics = ui.topics_of(session);
    // Depths from the snapshot the host publishes (no count over the jobs
    // table per look: the dashboard must not slow the workers).
    let snapshot = host.snapshot();
    let paused = host.paused().map_err(store_failed)?;
    let rows = topics
        .iter()
        .map(|name| {
            let topic = host.topics().find(|t| t.name() == name);
            pages::TopicRow {
                name: name.clone(),
                tenant: topic.and_then(|t| t.tenant()).map(str::to_owned),
                version: host.current_version(name).map(|v| v.version),
                paused: paused.contains(name),
                depth: snapshot.depths.get(name).copied().unwrap_or_default(),
                recent: ui.api.metrics().recent().summary(name, std::time::SystemTime::now()),
            }
        })
        .collect::<Vec<_>>();
    let mut tenants: Vec<String> = rows.iter().filter_map(|r| r.tenant.clone()).collect();
    tenants.sort();
    tenants.dedup();
    let tenants = tenants
        .into_iter()
        .map(|tenant| {
            let live = rows.iter().filter(|r| r.tenant.as_ref() == Some(&tenant)).map(|r| r.depth.live()).sum();
            let quota = host.quota(&tenant);
            pages::TenantRow {
                running: host.concurrency(&tenant).map(|(in_use, _)| in_use),
                max_concurrent: quota.max_concurrent,
                live,
                max_queued: quota.max_queued,
                name: tenant,
            }
        })
        .collect();
    Ok(pages::Overview { topics: rows, tenants })
}

async fn overview(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Page {
    let session = signed_in(&ui, &headers)?;
    let overview = blocking({
        let (ui, session) = (ui.clone(), session.clone());
        move || overview_of(&ui, &session)
    })
    .await?;
    Ok(pages::overview(&session, &overview).into_response())
}

/// The overview's tables alone, for htmx to refresh in place.
async fn overview_fragment(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Page {
    let session = signed_in(&ui, &headers)?;
    let overview = blocking(move || overview_of(&ui, &session)).await?;
    Ok(pages::overview_tables(&overview).into_response())
}

/// The job list's filters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct JobFilter {
    /// Only this topic ("" for all).
    #[serde(default)]
    pub(crate) topic: String,
    /// Only this state ("" for all).
    #[serde(default)]
    pub(crate) state: String,
    /// Only jobs older than this id ("" for the newest): the next page.
    #[serde(default)]
    pub(crate) before: String,
}

/// The jobs `session` sees that `filter` selects (newest first, at most a
/// page), and the topics it sees.
async fn listed(ui: &Arc<Ui>, session: &Session, filter: &JobFilter) -> Result<(Vec<String>, Vec<JobRecord>), Refusal> {
    let state = match filter.state.as_str() {
        "" => None,
        text => Some(
            serde_json::from_value::<JobState>(serde_json::Value::String(text.to_owned()))
                .map_err(|_| refusal(StatusCode::BAD_REQUEST, &format!("unknown state `{text}`")))?,
        ),
    };
    let before = match filter.before.as_str() {
        "" => None,
        id => Some(parse_id(id)?),
    };
    let visible = ui.topics_of(session);
    let topics = match filter.topic.as_str() {
        "" => visible.clone(),
        topic if visible.iter().any(|t| t == topic) => vec![topic.to_owned()],
        topic => return Err(refusal(StatusCode::NOT_FOUND, &format!("no topic `{topic}`"))),
    };
    let ui = ui.clone();
    let listed = blocking(move || {
        let mut jobs = Vec::new();
        for topic in topics {
            let filter = ListFilter { topic: Some(topic), state, limit: Some(pages::JOBS_PER_PAGE), before };
            jobs.extend(ui.api.host().dispatcher().store().list(&filter).map_err(store_failed)?);
        }
        jobs.sort_by_key(|job| std::cmp::Reverse(job.id));
        jobs.truncate(pages::JOBS_PER_PAGE);
        Ok(jobs)
    })
    .await?;
    Ok((visible, listed))
}

async fn jobs(State(ui): State<Arc<Ui>>, headers: HeaderMap, Query(filter): Query<JobFilter>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let (visible, listed) = listed(&ui, &session, &filter).await?;
    Ok(pages::jobs(&session, &visible, &filter, &listed).into_response())
}

/// The job list's rows alone, for htmx to refresh in place.
async fn job_rows(State(ui): State<Arc<Ui>>, headers: HeaderMap, Query(filter): Query<JobFilter>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let (_, listed) = listed(&ui, &session, &filter).await?;
    Ok(pages::job_rows(&listed).into_response())
}

fn parse_id(id: &str) -> Result<JobId, Refusal> {
    id.parse().map(JobId).map_err(|_| refusal(StatusCode::NOT_FOUND, &format!("no job `{id}`")))
}

async fn job(State(ui): State<Arc<Ui>>, headers: HeaderMap, Path(id): Path<String>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let id = parse_id(&id)?;
    let (record, input) = blocking({
        let (ui, session) = (ui.clone(), session.clone());
        move || {
            let record = ui.job_of(&session, id)?;
            Ok((record, ui.api.host().dispatcher().store().input(id).map_err(store_failed)?))
        }
    })
    .await?;
    Ok(pages::job(&session, &record, input.as_deref()).into_response())
}

/// `POST /ui/jobs/{id}/cancel|retry|discard`.
async fn act(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path((id, action)): Path<(String, String)>,
    Form(form): Form<Csrf>,
) -> Page {
    let session = changing(&ui, &headers, &form.csrf)?;
    let id = parse_id(&id)?;
    blocking({
        let ui = ui.clone();
        move || {
            ui.job_of(&session, id)?;
            let host = ui.api.host();
            let done = match action.as_str() {
                "cancel" => !matches!(host.cancel(id).map_err(store_failed)?, CancelResult::NotFound),
                "retry" => host.dispatcher().retry_incident(id).map_err(store_failed)? == RetryIncidentResult::Requeued,
                "discard" => host.discard_incident(id).map_err(store_failed)? == DiscardResult::Discarded,
                _ => return Err(refusal(StatusCode::NOT_FOUND, &format!("no action `{action}`"))),
            };
            if done { Ok(()) } else { Err(refusal(StatusCode::CONFLICT, &format!("job {id}: cannot {action} it now"))) }
        }
    })
    .await?;
    Ok(Redirect::to(&format!("/ui/jobs/{id}")).into_response())
}

/// The session of a state-changing request: signed in, with the session's
/// CSRF token, and allowed to change things.
fn changing(ui: &Ui, headers: &HeaderMap, csrf: &str) -> Result<Session, Refusal> {
    let session = signed_in(ui, headers)?;
    if !session::csrf_matches(&session, csrf) {
        return Err(refusal(StatusCode::FORBIDDEN, "This form has expired: reload the page and try again."));
    }
    if session.principal.read_only {
        return Err(refusal(StatusCode::FORBIDDEN, "This session may look but not change anything."));
    }
    Ok(session)
}

/// Who did it, for a version's record: the tenant, or `operator`.
fn by(session: &Session) -> String {
    match &session.principal.scope {
        Scope::Tenant(tenant) => tenant.clone(),
        Scope::Operator => "operator".to_owned(),
    }
}

/// A topic's page: its versions (roll back to any), a component to upload,
/// pause or resume.
async fn topic(State(ui): State<Arc<Ui>>, headers: HeaderMap, Path(topic): Path<String>) -> Page {
    let session = signed_in(&ui, &headers)?;
    ui.topic_of(&session, &topic)?;
    let (versions, paused) = blocking({
        let (ui, topic) = (ui.clone(), topic.clone());
        move || {
            let host = ui.api.host();
            let versions = host.versions(&topic).map_err(|e| refusal(StatusCode::CONFLICT, &e.to_string()))?;
            Ok((versions, host.paused().map_err(store_failed)?.contains(&topic)))
        }
    })
    .await?;
    Ok(pages::topic(&session, &topic, &versions, paused, None).into_response())
}

async fn pause(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path(topic): Path<String>,
    Form(form): Form<Csrf>,
) -> Page {
    set_paused(ui, headers, topic, form, true).await
}

async fn resume(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path(topic): Path<String>,
    Form(form): Form<Csrf>,
) -> Page {
    set_paused(ui, headers, topic, form, false).await
}

async fn set_paused(ui: Arc<Ui>, headers: HeaderMap, topic: String, form: Csrf, paused: bool) -> Page {
    let session = changing(&ui, &headers, &form.csrf)?;
    ui.topic_of(&session, &topic)?;
    let back = format!("/ui/topics/{}", pages::urlencode(&topic));
    blocking(move || {
        ui.api.host().set_paused(&topic, paused).map_err(|e| refusal(StatusCode::CONFLICT, &e.to_string()))
    })
    .await?;
    Ok(Redirect::to(&back).into_response())
}

/// The rollback form: the CSRF token and the version to make current.
#[derive(Deserialize)]
struct Rollback {
    csrf: String,
    version: String,
}

async fn rollback(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path(topic): Path<String>,
    Form(form): Form<Rollback>,
) -> Page {
    let session = changing(&ui, &headers, &form.csrf)?;
    ui.topic_of(&session, &topic)?;
    let back = format!("/ui/topics/{}", pages::urlencode(&topic));
    blocking(move || {
        let host = ui.api.host();
        host.rollback_by(&topic, Some(&form.version), Some(&by(&session)))
            .map_err(|e| refusal(StatusCode::CONFLICT, &e.to_string()))
    })
    .await?;
    Ok(Redirect::to(&back).into_response())
}

/// The upload form (multipart): the CSRF token, then the component. A
/// component the API would refuse is refused here with the same reason,
/// shown on the topic's page.
async fn deploy(State(ui): State<Arc<Ui>>, headers: HeaderMap, Path(topic): Path<String>, mut form: Multipart) -> Page {
    let bad = |e: &dyn std::fmt::Display| refusal(StatusCode::BAD_REQUEST, &format!("cannot read the form: {e}"));
    let (mut csrf, mut component) = (None, None);
    while let Some(field) = form.next_field().await.map_err(|e| bad(&e))? {
        match field.name() {
            Some("csrf") => csrf = Some(field.text().await.map_err(|e| bad(&e))?),
            Some("component") => component = Some(field.bytes().await.map_err(|e| bad(&e))?.to_vec()),
            _ => {}
        }
    }
    let session = changing(&ui, &headers, csrf.as_deref().unwrap_or_default())?;
    ui.topic_of(&session, &topic)?;
    let Some(bytes) = component.filter(|c| !c.is_empty()) else {
        return Err(refusal(StatusCode::BAD_REQUEST, "choose a component (.wasm) to upload"));
    };
    if bytes.len() > ui.api.limits().plugin {
        return Err(refusal(StatusCode::PAYLOAD_TOO_LARGE, "the component is over the plugin size limit"));
    }
    let outcome = blocking({
        let (ui, topic) = (ui.clone(), topic.clone());
        move || {
            let source = PluginSource::Bytes { bytes, name: format!("the component uploaded to `{topic}`") };
            let host = ui.api.host();
            let deployed =
                host.deploy_by(&topic, &source, Origin::Deploy, Some(&by(&session))).map_err(|e| e.to_string());
            let versions = host.versions(&topic).map_err(|e| refusal(StatusCode::CONFLICT, &e.to_string()))?;
            Ok((deployed, versions, host.paused().map_err(store_failed)?.contains(&topic), session))
        }
    })
    .await?;
    match outcome {
        (Ok(_), ..) => Ok(Redirect::to(&format!("/ui/topics/{}", pages::urlencode(&topic))).into_response()),
        (Err(reason), versions, paused, session) => Err(Refusal::Page(
            StatusCode::UNPROCESSABLE_ENTITY,
            pages::topic(&session, &topic, &versions, paused, Some(&reason)),
        )),
    }
}

/// The incident list's filters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IncidentFilter {
    /// Only this topic ("" for all).
    #[serde(default)]
    pub(crate) topic: String,
    /// Only incidents whose last fault code contains this ("" for all).
    #[serde(default)]
    pub(crate) code: String,
}

/// The open incidents `session` sees that match `filter`, newest first.
fn incidents_of(ui: &Ui, session: &Session, filter: &IncidentFilter) -> Result<Vec<JobRecord>, Refusal> {
    let visible = ui.topics_of(session);
    let mut incidents = ui.api.host().dispatcher().store().incidents().map_err(store_failed)?;
    incidents.retain(|job| {
        visible.contains(&job.topic)
            && (filter.topic.is_empty() || job.topic == filter.topic)
            && (filter.code.is_empty() || pages::fault_code(job).contains(filter.code.as_str()))
    });
    incidents.sort_by_key(|job| std::cmp::Reverse(job.id));
    Ok(incidents)
}

async fn incidents(State(ui): State<Arc<Ui>>, headers: HeaderMap, Query(filter): Query<IncidentFilter>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let (listed, filter) = blocking({
        let (ui, session) = (ui.clone(), session.clone());
        move || Ok((incidents_of(&ui, &session, &filter)?, filter))
    })
    .await?;
    Ok(pages::incidents(&session, &ui.topics_of(&session), &filter, &listed).into_response())
}

/// `POST /ui/incidents/bulk`: retry or discard the selected incidents
/// (`id` fields) or every one matching the filter (`all`); without
/// `confirm`, a page that counts them and asks.
async fn bulk(State(ui): State<Arc<Ui>>, headers: HeaderMap, RawForm(body): RawForm) -> Page {
    let (mut csrf, mut action, mut all, mut confirmed) = (String::new(), String::new(), false, false);
    let (mut ids, mut filter) = (Vec::new(), IncidentFilter::default());
    for (key, value) in form_urlencoded::parse(&body) {
        match key.as_ref() {
            "csrf" => csrf = value.into_owned(),
            "action" => action = value.into_owned(),
            "scope" => all = value == "all",
            "confirm" => confirmed = value == "yes",
            "topic" => filter.topic = value.into_owned(),
            "code" => filter.code = value.into_owned(),
            "id" => ids.push(parse_id(&value)?),
            _ => {}
        }
    }
    let session = changing(&ui, &headers, &csrf)?;
    if action != "retry" && action != "discard" {
        return Err(refusal(StatusCode::BAD_REQUEST, "choose retry or discard"));
    }
    blocking(move || {
        // Only incidents the session sees, open now, and matching.
        let matching = incidents_of(&ui, &session, &filter)?;
        let chosen: Vec<JobId> = if all {
            matching.iter().map(|job| job.id).collect()
        } else {
            ids.into_iter().filter(|id| matching.iter().any(|job| job.id == *id)).collect()
        };
        if !confirmed {
            return Ok(pages::confirm_bulk(&session, &action, all, &filter, &chosen).into_response());
        }
        let (mut done, mut skipped) = (0usize, 0usize);
        for id in &chosen {
            let applied = match action.as_str() {
                "retry" => {
                    ui.api.host().dispatcher().retry_incident(*id).map_err(store_failed)?
                        == RetryIncidentResult::Requeued
                }
                _ => ui.api.host().discard_incident(*id).map_err(store_failed)? == DiscardResult::Discarded,
            };
            if applied { done += 1 } else { skipped += 1 }
        }
        Ok(pages::bulk_done(&session, &action, done, skipped).into_response())
    })
    .await
}
