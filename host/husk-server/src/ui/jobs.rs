//! The job list (filtered, paged, its rows refreshed in place) and a job's
//! page with its cancel, retry and discard buttons.

use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;

use husk::store::{CancelResult, DiscardResult, JobId, JobRecord, JobState, RetryIncidentResult};

use super::{Csrf, Page, Refusal, Session, Ui, blocking, changing, pages, refusal, signed_in, store_failed};

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
    let listed =
        blocking(move || ui.api.list_jobs(topics, state, pages::JOBS_PER_PAGE, before).map_err(store_failed)).await?;
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
            Ok((record, ui.api.host().dispatcher().store().input(id).map_err(store_failed)?))
        }
    })
    .await?;
    Ok(pages::job(&session, &record, input.as_deref()).into_response())
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
