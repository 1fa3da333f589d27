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

mod events;
mod incidents;
mod jobs;
mod pages;
mod session;
mod topics;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Form, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use husk::store::{JobId, JobRecord};

use crate::api::Api;
use crate::tokens::Scope;
pub(crate) use incidents::IncidentFilter;
pub(crate) use jobs::JobFilter;
pub(crate) use session::{Session, Sessions};

/// The stylesheet.
const CSS: &str = include_str!("../../assets/husk.css");
/// htmx 2.0.11 (Zero-Clause BSD), as published on npm as `htmx.org`.
const HTMX: &str = include_str!("../../assets/htmx.min.js");
/// htmx's server-sent events extension 2.2.4 (Zero-Clause BSD), as
/// published on npm as `htmx-ext-sse`.
const HTMX_SSE: &str = include_str!("../../assets/htmx-ext-sse.min.js");
/// The dashboard's own script: closes a page's event stream when the page
/// is left (see the file).
const HUSK_JS: &str = include_str!("../../assets/husk.js");

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
        .route("/events", get(events::events))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/jobs", get(jobs::jobs))
        .route("/jobs/rows", get(jobs::job_rows))
        .route("/jobs/find", get(jobs::find))
        .route("/jobs/{id}", get(jobs::job))
        .route("/jobs/{id}/{action}", post(jobs::act))
        .route("/incidents", get(incidents::incidents))
        .route("/incidents/bulk", post(incidents::bulk))
        .route("/topics/{topic}", get(topics::topic))
        .route("/topics/{topic}/pause", post(topics::pause))
        .route("/topics/{topic}/resume", post(topics::resume))
        .route("/topics/{topic}/rollback", post(topics::rollback))
        .route("/topics/{topic}/deploy", post(topics::deploy).layer(DefaultBodyLimit::max(upload_limit)))
        .route("/assets/husk.css", get(|| async { asset(CSS, "text/css; charset=utf-8") }))
        .route("/assets/htmx.min.js", get(|| async { asset(HTMX, "text/javascript; charset=utf-8") }))
        .route("/assets/htmx-ext-sse.min.js", get(|| async { asset(HTMX_SSE, "text/javascript; charset=utf-8") }))
        .route("/assets/husk.js", get(|| async { asset(HUSK_JS, "text/javascript; charset=utf-8") }))
        .layer(axum::middleware::map_response(secure_headers))
        .with_state(ui)
}

async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // `same-origin`, not `no-referrer`: with no referrer, browsers send
    // `Origin: null` on this site's own form posts, and the sign-in checks it.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    // Pages are never stored; the assets say how long they keep.
    headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

/// A stylesheet or script of the binary, kept by the browser for an hour.
fn asset(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "public, max-age=3600")], body).into_response()
}

/// Whether a form post comes from a page of this server: its `Origin`, when
/// the browser sends one, names the host the request was sent to.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else { return true };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let origin = origin.to_str().unwrap_or_default();
    let origin = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    !host.is_empty() && origin == Some(host)
}

/// A page or a refusal.
type Page = Result<Response, Refusal>;

/// Why a request gets no page of its own.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Not signed in: to the sign-in form (for an htmx request, which
    /// would put the form inside the page, by `HX-Redirect`).
    SignIn {
        /// Whether htmx asked.
        htmx: bool,
    },
    /// A page saying why, with its status.
    Page(StatusCode, maud::Markup),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::SignIn { htmx: false } => Redirect::to("/ui/login").into_response(),
            Refusal::SignIn { htmx: true } => ([("hx-redirect", "/ui/login")], "").into_response(),
            Refusal::Page(status, page) => (status, page).into_response(),
        }
    }
}

/// The request's session, or the way to sign in.
fn signed_in(ui: &Ui, headers: &HeaderMap) -> Result<Session, Refusal> {
    let mut session = ui.sessions.of(headers).ok_or(Refusal::SignIn { htmx: headers.contains_key("hx-request") })?;
    // From the published snapshot: no store call per page.
    let counts = &ui.api.host().snapshot().incidents;
    session.open_incidents = ui.topics_of(&session).iter().filter_map(|topic| counts.get(topic)).sum();
    Ok(session)
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
        let record = self.api.host().job(id).map_err(store_failed)?.ok_or_else(not_found)?;
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

async fn login(State(ui): State<Arc<Ui>>, headers: HeaderMap, Form(form): Form<Login>) -> Page {
    // A sign-in posted from another site would put this browser in the
    // poster's session (login CSRF).
    if !same_origin(&headers) {
        return Err(refusal(StatusCode::FORBIDDEN, "Sign in from this server's own page."));
    }
    let Some(principal) = ui.api.tenants().principal(form.token.trim()) else {
        return Err(Refusal::Page(StatusCode::UNAUTHORIZED, pages::login(Some("Unknown token."))));
    };
    let id = ui.sessions.open(principal).map_err(|e| refusal(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))?;
    Ok(([(header::SET_COOKIE, session::set_cookie(Some(&id)))], Redirect::to("/ui")).into_response())
}

/// A form that only carries the CSRF token.
#[derive(Deserialize)]
pub(super) struct Csrf {
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
                incidents: snapshot.incidents.get(name).copied().unwrap_or_default(),
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

/// The session of a state-changing request: signed in, with the session's
/// CSRF token, and allowed to change things.
fn changing(ui: &Ui, headers: &HeaderMap, csrf: &str) -> Result<Session, Refusal> {
    let session = may_change(ui, headers)?;
    if !session::csrf_matches(&session, csrf) {
        return Err(refusal(StatusCode::FORBIDDEN, "This form has expired: reload the page and try again."));
    }
    Ok(session)
}

/// The request's session if it is signed in and may change things (its
/// CSRF token not checked yet: see [`changing`]).
fn may_change(ui: &Ui, headers: &HeaderMap) -> Result<Session, Refusal> {
    let session = signed_in(ui, headers)?;
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
