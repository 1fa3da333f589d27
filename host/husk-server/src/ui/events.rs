//! Server-sent events: `GET /ui/events` tells a signed-in page when
//! outcomes of its session's topics arrive, so the job list and the
//! overview refresh as jobs end instead of on a timer. One `outcomes` event
//! per [`COALESCE`] at most, its data the number of outcomes it stands for
//! (a stream that fell behind counts what it skipped as one), whatever the
//! pipeline's rate: a page costs a refresh per window, not one per job.
//!
//! The events come from the outcomes this process delivers; on a store
//! shared by several processes, the pages' slow timer picks up the others'.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::{Page, Ui, signed_in};

/// Outcomes arriving within this window after the first make one event.
pub(super) const COALESCE: Duration = Duration::from_millis(500);

/// What one page's stream holds between events.
struct Watch {
    ui: Arc<Ui>,
    headers: HeaderMap,
    topics: HashSet<String>,
    feed: Receiver<Arc<str>>,
}

impl Watch {
    /// Waits for an outcome of one of the session's topics, then for the
    /// rest of the window; the number of outcomes seen, `None` when the
    /// feed closed (the process stops) or the session ended.
    async fn next(&mut self) -> Option<u64> {
        let mut seen = loop {
            let received = tokio::select! {
                received = self.feed.recv() => received,
                () = self.ui.api.feed.closed() => return None,
            };
            match received {
                Ok(topic) if self.topics.contains(&*topic) => break 1,
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => break 1,
                Err(RecvError::Closed) => return None,
            }
        };
        tokio::time::sleep(COALESCE).await;
        loop {
            match self.feed.try_recv() {
                Ok(topic) => seen += u64::from(self.topics.contains(&*topic)),
                Err(TryRecvError::Lagged(_)) => seen += 1,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Closed) => return None,
            }
        }
        // A session signed out or expired hears no more.
        signed_in(&self.ui, &self.headers).ok()?;
        Some(seen)
    }
}

/// `GET /ui/events`: the session's stream of `outcomes` events.
pub(super) async fn events(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Page {
    let session = signed_in(&ui, &headers)?;
    let topics = ui.topics_of(&session).into_iter().collect();
    let feed = ui.api.feed.topics();
    let watch = Watch { ui, headers, topics, feed };
    let stream = futures_util::stream::unfold(watch, |mut watch| async move {
        let seen = watch.next().await?;
        Some((Ok::<_, Infallible>(Event::default().event("outcomes").data(seen.to_string())), watch))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}
