//! The job list (filtered, paged, its rows refreshed in place) and a job's
//! page with its cancel, retry and discard buttons.

use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;

use husk::outcome::OutcomeKind;
use husk::store::{CancelResult, DiscardResult, JobId, JobRecord, ListFilter, RetryIncidentResult};

use crate::api::model::JobStatus;
use crate::api::parse_time;

use super::{Csrf, Page, Refusal, Session, Ui, blocking, changing, pages, refusal, signed_in, store_failed};

/// The job list's filters, as its form and links send them ("" for
/// none).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct JobFilter {
    /// Only this topic.
    #[serde(default)]
    pub(crate) topic: String,
    /// Only this state.
    #[serde(default)]
    pub(crate) state: String,
    /// Only ended jobs with this kind of outcome.
    #[serde(default)]
    pub(crate) outcome: String,
    /// Only jobs enqueued at or after this time (UTC, as a
    /// `datetime-local` input sends it).
    #[serde(default)]
    pub(crate) from: String,
    /// Only jobs enqueued before this time (UTC).
    #[serde(default)]
    pub(crate) to: String,
    /// Only jobs whose last fault's code contains this text.
    #[serde(default)]
    pub(crate) fault: String,
    /// Only jobs older than this id ("" for the newest): the next page.
    #[serde(default)]
    pub(crate) before: String,
}

impl JobFilter {
    /// The filter as a URL's query, paging before job `before` ("" for
    /// the newest).
    pub(crate) fn query(&self, before: &str) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        let fields = [
            ("topic", &self.topic),
            ("state", &self.state),
            ("outcome", &self.outcome),
            ("from", &self.from),
            ("to", &self.to),
            ("fault", &self.fault),
        ];
        for (name, value) in fields.into_iter().filter(|(_, value)| !value.is_empty()) {
            query.append_pair(name, value);
        }
        if !before.is_empty() {
            query.append_pair("before", before);
        }
        query.finish()
    }

    /// The store's filter (its topic left to the caller), or why the form's
    /// values are refused.
    fn to_list_filter(&self) -> Result<ListFilter, Refusal> {
        let bad = |text: String| refusal(StatusCode::BAD_REQUEST, &text);
        let status = match self.state.as_str() {
            "" => None,
            text => Some(text.parse::<JobStatus>().map_err(bad)?),
        };
        let outcome = match self.outcome.as_str() {
            "" => None,
            text => Some(text.parse::<OutcomeKind>().map_err(bad)?),
        };
        // A state and an outcome that contradict each other: a page of none.
        let (by_state, limit) = match JobStatus::list_filter(status, outcome) {
            Some(by_state) => (by_state, pages::JOBS_PER_PAGE),
            None => (ListFilter::default(), 0),
        };
        let time = |text: &str| match text {
            "" => Ok(None),
            text => parse_time(text).map(Some).map_err(bad),
        };
        let before = match self.before.as_str() {
            "" => None,
            id => Some(parse_id(id)?),
        };
        Ok(ListFilter {
            topic: None,
            enqueued_after: time(&self.from)?,
            enqueued_before: time(&self.to)?,
            fault_code: Some(self.fault.trim().to_owned()).filter(|code| !code.is_empty()),
            limit: Some(limit),
            before,
            ..by_state
        })
    }
}

/// The jobs `session` sees that `filter` selects (newest first, at most a
/// page), and the topics it sees.
async fn listed(ui: &Arc<Ui>, session: &Session, filter: &JobFilter) -> Result<(Vec<String>, Vec<JobRecord>), Refusal> {
    let list_filter = filter.to_list_filter()?;
    let visible = ui.topics_of(session);
    let topics = match filter.topic.as_str() {
        "" => visible.clone(),
        topic if visible.iter().any(|t| t == topic) => vec![topic.to_owned()],
        topic => return Err(refusal(StatusCode::NOT_FOUND, &format!("no topic `{topic}`"))),
    };
    let ui = ui.clone();
    let listed = blocking(move || ui.api.list_jobs(topics, list_filter).map_err(store_failed)).await?;
    Ok((visible, listed))
}

pub(super) async fn jobs(State(ui): State<Arc<Ui>>, headers: HeaderMap, Query(filter): Query<JobFilter>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let (visible, listed) = listed(&ui, &session, &filter).await?;
    Ok(pages::jobs(&session, &visible, &filter, &listed).into_response())
}

/// The job list's rows alone, for htmx to refresh in place.
pub(super) async fn job_rows(State(ui): State<Arc<Ui>>, headers: HeaderMap, Query(filter): Query<JobFilter>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let (_, listed) = listed(&ui, &session, &filter).await?;
    Ok(pages::job_rows(&listed).into_response())
}

pub(super) fn parse_id(id: &str) -> Result<JobId, Refusal> {
    id.parse().map(JobId).map_err(|_| refusal(StatusCode::NOT_FOUND, &format!("no job `{id}`")))
}

pub(super) async fn job(State(ui): State<Arc<Ui>>, headers: HeaderMap, Path(id): Path<String>) -> Page {
    let session = signed_in(&ui, &headers)?;
    let id = parse_id(&id)?;
    let (record, input) = blocking({
        let (ui, session) = (ui.clone(), session.clone());
        move || {
            let record = ui.job_of(&session, id)?;
            Ok((record, ui.api.host().input(id).map_err(store_failed)?))
        }
    })
    .await?;
    Ok(pages::job(&session, &record, input.as_deref()).into_response())
}

/// The navigation's job-id box.
#[derive(Debug, Deserialize)]
pub(super) struct Find {
    id: String,
}

/// `GET /ui/jobs/find?id=`: to the job's page (signed in; an id that is not
/// a number is refused there).
pub(super) async fn find(State(ui): State<Arc<Ui>>, headers: HeaderMap, Query(find): Query<Find>) -> Page {
    signed_in(&ui, &headers)?;
    let id = parse_id(find.id.trim().trim_start_matches('#'))?;
    Ok(Redirect::to(&format!("/ui/jobs/{id}")).into_response())
}

/// `POST /ui/jobs/{id}/cancel|retry|discard`.
pub(super) async fn act(
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
            let (done, why) = match action.as_str() {
                "cancel" => (!matches!(host.cancel(id).map_err(store_failed)?, CancelResult::NotFound), "it is gone"),
                "retry" => (
                    host.retry_incident(id).map_err(store_failed)? == RetryIncidentResult::Requeued,
                    "it is not an open incident (retried or discarded already?)",
                ),
                "discard" => (
                    host.discard_incident(id).map_err(store_failed)? == DiscardResult::Discarded,
                    "it is not an open incident (retried or discarded already?)",
                ),
                _ => return Err(refusal(StatusCode::NOT_FOUND, &format!("no action `{action}`"))),
            };
            if done {
                return Ok(());
            }
            let text = format!("Job {id}: cannot {action} it: {why}");
            let back = format!("/ui/jobs/{id}");
            Err(Refusal::Page(StatusCode::CONFLICT, pages::refused(&session, StatusCode::CONFLICT, &text, &back)))
        }
    })
    .await?;
    Ok(Redirect::to(&format!("/ui/jobs/{id}")).into_response())
}
