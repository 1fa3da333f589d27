//! Open incidents: grouped, filtered, retried or discarded in bulk after a
//! count.

use std::sync::Arc;

use axum::extract::{Query, RawForm, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde::Deserialize;

use husk::store::{DiscardResult, JobId, JobRecord, RetryIncidentResult};

use super::jobs::parse_id;
use super::{Page, Refusal, Session, Ui, blocking, changing, pages, refusal, signed_in, store_failed};

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
    let mut incidents = ui.api.host().incidents().map_err(store_failed)?;
    incidents.retain(|job| {
        visible.contains(&job.topic)
            && (filter.topic.is_empty() || job.topic == filter.topic)
            && (filter.code.is_empty() || pages::fault_code(job).contains(filter.code.as_str()))
    });
    incidents.sort_by_key(|job| std::cmp::Reverse(job.id));
    Ok(incidents)
}

pub(super) async fn incidents(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Query(filter): Query<IncidentFilter>,
) -> Page {
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
pub(super) async fn bulk(State(ui): State<Arc<Ui>>, headers: HeaderMap, RawForm(body): RawForm) -> Page {
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
                "retry" => ui.api.host().retry_incident(*id).map_err(store_failed)? == RetryIncidentResult::Requeued,
                _ => ui.api.host().discard_incident(*id).map_err(store_failed)? == DiscardResult::Discarded,
            };
            if applied { done += 1 } else { skipped += 1 }
        }
        Ok(pages::bulk_done(&session, &action, done, skipped).into_response())
    })
    .await
}
