//! The outcome stream: `GET /v1/outcomes?after=<cursor>` long-polls for the
//! tenant's terminal outcomes after a cursor, in the store's order. The
//! cursor is the store's outcome `seq`: a consumer that reconnects with the
//! last cursor it saw gets every later outcome, once per job.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Deserialize;
use tokio::sync::{Notify, broadcast, watch};
use utoipa::IntoParams;

use super::model::{OutcomePage, StreamedOutcome};
use super::{Api, ApiError, Caller, ErrorKind, blocking};
use husk::outcome::{OutcomeSink, TerminalOutcome};

/// Longest long-poll wait a request may ask for.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// How often a waiting poll looks at the store even without a local
/// outcome: outcomes of other processes sharing the store arrive this way.
const RECHECK: Duration = Duration::from_millis(250);

/// How many outcomes' topics the dashboard's event streams may fall behind
/// by before they skip (a skipped stream refreshes anyway).
const EVENTS_BACKLOG: usize = 1024;

/// Wakes waiting long-polls when this process delivers an outcome, and
/// tells the dashboard's event streams the topic of each.
#[derive(Debug)]
pub struct OutcomeFeed {
    notify: Notify,
    topics: broadcast::Sender<Arc<str>>,
    /// Set when the process stops: waits end.
    closing: watch::Sender<bool>,
}

impl Default for OutcomeFeed {
    fn default() -> Self {
        Self { notify: Notify::new(), topics: broadcast::channel(EVENTS_BACKLOG).0, closing: watch::channel(false).0 }
    }
}

impl OutcomeFeed {
    /// A feed no one waits on yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ends every wait on the feed, for good (the process stops): a waiting
    /// long-poll answers with what it has, an event stream ends. Without
    /// it, a dashboard left open would hold a graceful shutdown forever.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Resolves once the feed is closed.
    pub(crate) async fn closed(&self) {
        let mut closing = self.closing.subscribe();
        let _ = closing.wait_for(|closed| *closed).await;
    }

    fn is_closed(&self) -> bool {
        *self.closing.borrow()
    }

    /// The topics of the outcomes this process delivers from now on, one
    /// message per outcome (a receiver that falls behind is told it
    /// lagged).
    pub(crate) fn topics(&self) -> broadcast::Receiver<Arc<str>> {
        self.topics.subscribe()
    }
}

impl OutcomeSink for OutcomeFeed {
    fn deliver(&self, outcome: &TerminalOutcome) {
        self.notify.notify_waiters();
        // Nothing to allocate while no dashboard page is open.
        if self.topics.receiver_count() > 0 {
            let _ = self.topics.send(outcome.topic.as_str().into());
        }
    }
}

/// The most outcomes one poll returns.
const MAX_LIMIT: usize = 1000;

/// Query of `GET /v1/outcomes`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct OutcomesQuery {
    /// Outcomes after this cursor (default 0: from the start).
    after: Option<u64>,
    /// Most outcomes returned (default 100, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// How long to wait for one when there is none (default `30s`; a longer
    /// wait is cut to `60s`; `0s` returns at once).
    #[param(example = "5s")]
    wait: Option<String>,
}

/// Long-polls for the tenant's outcomes after a cursor, in the store's
/// order; pass the answer's `cursor` as the next `after`. Outcomes of
/// other tenants are skipped (the cursor moves past them). A consumer that
/// polls again with the last cursor it saw gets every later outcome, once
/// per job: a cursor the stream cannot serve is refused, never a silent gap.
#[utoipa::path(
    get, path = "/outcomes", tag = "outcomes",
    params(OutcomesQuery),
    responses(
        (status = 200, body = OutcomePage),
        (status = 400, description = "`bad-request`.", body = ApiError),
        (status = 401, body = ApiError),
        (status = 409, description = "`cursor-ahead`: a cursor past the stream's head (`head_cursor`).", body = ApiError),
        (status = 410, description = "`cursor-gone`: outcomes after the cursor were pruned (`oldest_cursor`).", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn long_poll(
    State(api): State<Arc<Api>>,
    caller: Caller,
    query: Result<Query<OutcomesQuery>, QueryRejection>,
) -> Result<Json<OutcomePage>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let wait = match &query.wait {
        Some(text) => humantime::parse_duration(text)
            .map_err(|e| ApiError::bad_request(format!("wait: `{text}`: {e}")))?
            .min(MAX_WAIT),
        None => Duration::from_secs(30),
    };
    let limit = match query.limit {
        Some(limit @ 1..=MAX_LIMIT) => limit,
        Some(other) => return Err(ApiError::bad_request(format!("limit: 1 to {MAX_LIMIT}, not {other}"))),
        None => 100,
    };
    let topics = api.topics_of(&caller.tenant);
    let deadline = tokio::time::Instant::now() + wait;
    let mut cursor = query.after.unwrap_or(0);
    // Outcomes after the cursor may have been pruned: say so, never skip
    // them silently.
    let host = api.host.clone();
    let pruned_through = blocking(move || Ok(host.pruned_through()?)).await?;
    if cursor < pruned_through {
        let message = format!(
            "outcomes after cursor {cursor} were pruned (kept as long as the retention says); \
             the oldest cursor still complete is {pruned_through}"
        );
        return Err(ApiError { oldest_cursor: Some(pruned_through), ..ApiError::new(ErrorKind::CursorGone, message) });
    }
    // Past what a store's cursor can be: never handed out, and not a value
    // to read the store with.
    if cursor > i64::MAX as u64 {
        return Err(cursor_ahead(cursor, head(&api, pruned_through).await?));
    }
    let mut first = true;
    loop {
        let notified = api.feed.notify.notified();
        tokio::pin!(notified);
        // Registered before reading the store: an outcome delivered in
        // between still wakes this poll.
        notified.as_mut().enable();
        let host = api.host.clone();
        let after = cursor;
        let batch = blocking(move || Ok(host.outcomes_after(after, limit)?)).await?;
        // Nothing after the cursor asked for: it may be one never handed
        // out (a typo, another store's), which is refused, not waited on.
        // (Outcomes after it prove it is not: the head is read only here.)
        if std::mem::take(&mut first) && batch.is_empty() {
            let head = head(&api, pruned_through).await?;
            if cursor > head {
                return Err(cursor_ahead(cursor, head));
            }
        }
        if let Some(last) = batch.last() {
            cursor = last.seq;
        }
        let outcomes: Vec<StreamedOutcome> =
            batch.iter().filter(|o| topics.contains(&o.topic)).map(StreamedOutcome::from).collect();
        let now = tokio::time::Instant::now();
        if !outcomes.is_empty() || now >= deadline || api.feed.is_closed() {
            return Ok(Json(OutcomePage { outcomes, cursor }));
        }
        tokio::select! {
            _ = tokio::time::timeout((deadline - now).min(RECHECK), notified) => {}
            () = api.feed.closed() => {}
        }
    }
}

/// The stream's head: the largest cursor it can hand out now (at least
/// what was pruned through).
async fn head(api: &Arc<Api>, pruned_through: u64) -> Result<u64, ApiError> {
    let host = api.host.clone();
    Ok(blocking(move || Ok(host.outcome_head()?)).await?.max(pruned_through))
}

/// The refusal of a cursor past the stream's `head`.
fn cursor_ahead(cursor: u64, head: u64) -> ApiError {
    let message = format!("cursor {cursor} is past the stream's head, {head}: it was never handed out here");
    ApiError { head_cursor: Some(head), ..ApiError::new(ErrorKind::CursorAhead, message) }
}
