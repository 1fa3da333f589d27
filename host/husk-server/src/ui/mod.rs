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
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use husk::store::{CancelResult, DiscardResult, JobId, JobRecord, JobState, ListFilter, RetryIncidentResult};

use crate::api::Api;
use crate::tokens::Scope;
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
    let ui = Arc::new(Ui { api, sessions: Sessions::default() });
    Router::new()
        .route("/", get(overview))
        .route("/overview", get(overview_fragment))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/jobs", get(jobs))
        .route("/jobs/{id}", get(job))
        .route("/jobs/{id}/{action}", post(act))
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
    let depths = host.dispatcher().store().depths().map_err(store_failed)?;
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
                depth: depths.iter().find(|(t, _)| t == name).map(|(_, d)| *d).unwrap_or_default(),
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
}

async fn jobs(State(ui): State<Arc<Ui>>, headers: HeaderMap, Query(filter): Query<JobFilter>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let state = match filter.state.as_str() {
        "" => None,
        text => Some(
            serde_json::from_value::<JobState>(serde_json::Value::String(text.to_owned()))
                .map_err(|_| refusal(StatusCode::BAD_REQUEST, &format!("unknown state `{text}`")))?,
        ),
    };
    let visible = ui.topics_of(&session);
    let topics = match filter.topic.as_str() {
        "" => visible.clone(),
        topic if visible.iter().any(|t| t == topic) => vec![topic.to_owned()],
        topic => return Err(refusal(StatusCode::NOT_FOUND, &format!("no topic `{topic}`"))),
    };
    let listed = blocking({
        let ui = ui.clone();
        move || {
            let mut jobs = Vec::new();
            for topic in topics {
                let filter = ListFilter { topic: Some(topic), state, limit: Some(pages::JOBS_PER_PAGE) };
                jobs.extend(ui.api.host().dispatcher().store().list(&filter).map_err(store_failed)?);
            }
            jobs.sort_by_key(|job| std::cmp::Reverse(job.id));
            jobs.truncate(pages::JOBS_PER_PAGE);
            Ok(jobs)
        }
    })
    .await?;
    Ok(pages::jobs(&session, &visible, &filter, &listed).into_response())
}

fn parse_id(id: &str) -> Result<JobId, Refusal> {
    id.parse().map(JobId).map_err(|_| refusal(StatusCode::NOT_FOUND, &format!("no job `{id}`")))
}

async fn job(State(ui): State<Arc<Ui>>, headers: HeaderMap, Path(id): Path<String>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let id = parse_id(&id)?;
    let record = blocking({
        let (ui, session) = (ui.clone(), session.clone());
        move || ui.job_of(&session, id)
    })
    .await?;
    Ok(pages::job(&session, &record).into_response())
}

/// `POST /ui/jobs/{id}/cancel|retry|discard`.
async fn act(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path((id, action)): Path<(String, String)>,
    Form(form): Form<Csrf>,
) -> Page {
    let session = signed_in(&ui, &headers)?;
    if !session::csrf_matches(&session, &form.csrf) {
        return Err(refusal(StatusCode::FORBIDDEN, "This form has expired: reload the page and try again."));
    }
    if session.principal.read_only {
        return Err(refusal(StatusCode::FORBIDDEN, "This session may look but not change anything."));
    }
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
