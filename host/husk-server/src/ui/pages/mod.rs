//! The dashboard's pages, rendered with maud (which escapes every value it
//! is given: job data shows as text, never as markup).

use std::time::SystemTime;

use axum::http::StatusCode;
use maud::{DOCTYPE, Markup, html};

use husk::outcome::OutcomeKind;
use husk::store::{Depth, JobRecord};

use crate::api::model::JobStatus;
use crate::recent::{Counts, MINUTES, Summary};

mod incidents;
pub(super) mod topic;

pub(super) use incidents::{bulk_done, confirm_bulk, fault_code, incidents};
pub(super) use topic::topic;

use super::{IncidentFilter, JobFilter, Session};
use crate::tokens::Scope;

/// Most jobs one list page shows.
pub(super) const JOBS_PER_PAGE: usize = 100;

/// Most bytes of a fault body or an output shown on a job's page.
const SHOWN_BYTES: usize = 16 * 1024;

/// One topic's row of the overview.
pub(super) struct TopicRow {
    pub(super) name: String,
    pub(super) tenant: Option<String>,
    pub(super) version: Option<String>,
    pub(super) paused: bool,
    pub(super) depth: Depth,
    /// Open incidents, as last counted.
    pub(super) incidents: u64,
    pub(super) recent: Summary,
}

/// One tenant's quota use.
pub(super) struct TenantRow {
    pub(super) name: String,
    pub(super) running: Option<usize>,
    pub(super) max_concurrent: Option<usize>,
    pub(super) live: u64,
    pub(super) max_queued: Option<u64>,
}

/// What the overview shows.
pub(super) struct Overview {
    pub(super) topics: Vec<TopicRow>,
    pub(super) tenants: Vec<TenantRow>,
}

/// A whole page: head, navigation (when signed in), `body`.
fn layout(title: &str, session: Option<&Session>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                // No inline styles or eval: the CSP allows neither.
                meta name="htmx-config" content=r#"{"includeIndicatorStyles":false,"allowEval":false}"#;
                title { (title) " · husk" }
                link rel="stylesheet" href="/ui/assets/husk.css";
                script src="/ui/assets/htmx.min.js" {}
                script src="/ui/assets/htmx-ext-sse.min.js" {}
                script src="/ui/assets/husk.js" {}
            }
            body {
                @if let Some(session) = session {
                    nav {
                        a href="/ui" { "Overview" }
                        a href="/ui/jobs" { "Jobs" }
                        a href="/ui/incidents" {
                            "Incidents"
                            @if session.open_incidents > 0 { " " span.badge #open-incidents { (session.open_incidents) } }
                        }
                        form.jump method="get" action="/ui/jobs/find" {
                            input type="search" name="id" placeholder="Job id" inputmode="numeric" aria-label="Job id";
                        }
                        span.who { (who(session)) }
                        form method="post" action="/ui/logout" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                @if session.is_some() {
                    // Server-sent `outcomes` events refresh the lists (see `ui::events`).
                    main hx-ext="sse" sse-connect="/ui/events" { h1 { (title) } (body) }
                } @else {
                    main { h1 { (title) } (body) }
                }
            }
        }
    }
}

fn who(session: &Session) -> String {
    let scope = match &session.principal.scope {
        Scope::Tenant(tenant) => format!("tenant {tenant}"),
        Scope::Operator => "operator".to_owned(),
    };
    if session.principal.read_only { format!("{scope} (read-only)") } else { scope }
}

/// A message page (a refusal).
pub(super) fn message(status: StatusCode, text: &str) -> Markup {
    layout(
        status.canonical_reason().unwrap_or("Error"),
        None,
        html! { p.message { (text) } p { a href="/ui" { "Back" } } },
    )
}

/// A refused action of a signed-in session: why, in the page's frame (with
/// the navigation), and the way back to what it acted on.
pub(super) fn refused(session: &Session, status: StatusCode, text: &str, back: &str) -> Markup {
    layout(
        status.canonical_reason().unwrap_or("Error"),
        Some(session),
        html! { p.message { (text) } p { a #back href=(back) { "Back" } } },
    )
}

/// The sign-in form, with `error` above it.
pub(super) fn login(error: Option<&str>) -> Markup {
    layout(
        "Sign in",
        None,
        html! {
            @if let Some(error) = error { p.error { (error) } }
            form method="post" action="/ui/login" {
                label for="token" { "Token" }
                input #token type="password" name="token" autocomplete="off" required;
                button type="submit" { "Sign in" }
            }
        },
    )
}

/// The overview page.
pub(super) fn overview(session: &Session, overview: &Overview) -> Markup {
    layout(
        "Overview",
        Some(session),
        html! {
            // Refreshed in place as outcomes arrive, and every 2 s (depths
            // change with enqueues too).
            div hx-get="/ui/overview" hx-trigger="sse:outcomes, every 2s" hx-swap="innerHTML" {
                (overview_tables(overview))
            }
        },
    )
}

/// The overview's tables (also served alone for the refresh).
pub(super) fn overview_tables(overview: &Overview) -> Markup {
    html! {
        h2 { "Topics" }
        table #topics {
            thead { tr { th { "Topic" } th { "Tenant" } th { "Version" } th { "State" }
                         th.n { "Queued" } th.n { "Waiting" } th.n { "Running" } th.n { "Incidents" } } }
            tbody {
                @for topic in &overview.topics {
                    tr data-topic=(topic.name) {
                        td { a href={ "/ui/topics/" (urlencode(&topic.name)) } { (topic.name) } }
                        td { (topic.tenant.as_deref().unwrap_or("—")) }
                        td.digest title=[topic.version.as_deref()] { (short(topic.version.as_deref().unwrap_or("—"))) }
                        td { @if topic.paused { "paused" } @else { "running" } }
                        td.n.queued { (topic.depth.queued) }
                        td.n.gated { (topic.depth.gated) }
                        td.n.running { (topic.depth.running) }
                        td.n.incidents {
                            @if topic.incidents > 0 {
                                a href={ "/ui/incidents?topic=" (urlencode(&topic.name)) } { (topic.incidents) }
                            } @else { "0" }
                        }
                    }
                }
            }
        }
        h2 { "The last hour (outcomes this process delivered)" }
        table #recent {
            thead { tr { th { "Topic" } th { "" } th.n { "Completed" } th.n { "Business" } th.n { "Failed" }
                         th.n { "Cancelled" } th { "Kills (hour)" } th { "Per minute: completed, failed" } } }
            tbody {
                @for topic in &overview.topics {
                    tr data-topic=(topic.name) {
                        td rowspan="2" { (topic.name) }
                        td { "minute" }
                        (counts(&topic.recent.last_minute, "minute"))
                        td rowspan="2" {
                            @for (reason, count) in &topic.recent.kills { span.kill { (reason) " " (count) } " " }
                        }
                        td rowspan="2" { (chart(&topic.recent)) }
                    }
                    tr data-topic=(topic.name) {
                        td { "hour" }
                        (counts(&topic.recent.last_hour, "hour"))
                    }
                }
            }
        }
        h2 { "Tenants" }
        table #tenants {
            thead { tr { th { "Tenant" } th.n { "Running" } th.n { "Live jobs" } } }
            tbody {
                @for tenant in &overview.tenants {
                    tr {
                        td { (tenant.name) }
                        td.n { (of(tenant.running.map(|r| r as u64), tenant.max_concurrent.map(|m| m as u64))) }
                        td.n { (of(Some(tenant.live), tenant.max_queued)) }
                    }
                }
            }
        }
    }
}

/// `n / limit`, or `n` without a limit.
fn of(n: Option<u64>, limit: Option<u64>) -> String {
    match (n, limit) {
        (Some(n), Some(limit)) => format!("{n} / {limit}"),
        (Some(n), None) => n.to_string(),
        (None, _) => "—".to_owned(),
    }
}

/// The first 12 characters of a digest.
fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// `text` for a URL's query.
pub(super) fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A run's length, from microseconds, in the unit that reads best.
fn ran_for(micros: u64) -> String {
    match micros {
        0..1_000 => format!("{micros} µs"),
        1_000..1_000_000 => format!("{:.1} ms", micros as f64 / 1e3),
        _ => format!("{:.2} s", micros as f64 / 1e6),
    }
}

/// Seconds since the epoch, as RFC 3339 (UTC).
fn when(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

/// A filter's topic choice: all, or one of `topics`.
fn topic_select(topics: &[String], selected: &str) -> Markup {
    html! {
        label { "Topic " select name="topic" {
            option value="" { "all" }
            @for topic in topics { option value=(topic) selected[topic == selected] { (topic) } }
        } }
    }
}

/// The job list page.
pub(super) fn jobs(session: &Session, topics: &[String], filter: &JobFilter, jobs: &[JobRecord]) -> Markup {
    layout(
        "Jobs",
        Some(session),
        html! {
            form.filters method="get" action="/ui/jobs" {
                (topic_select(topics, &filter.topic))
                label { "State " select name="state" {
                    option value="" { "any" }
                    @for state in JobStatus::ALL.map(JobStatus::as_str) {
                        option value=(state) selected[state == filter.state] { (state) }
                    }
                } }
                label { "Outcome " select name="outcome" {
                    option value="" { "any" }
                    @for kind in OutcomeKind::ALL {
                        option value=(kind.as_str()) selected[kind.as_str() == filter.outcome] { (kind.as_str()) }
                    }
                } }
                label { "Enqueued from " input type="datetime-local" name="from" value=(filter.from); }
                label { "to " input type="datetime-local" name="to" value=(filter.to); " UTC" }
                label { "Fault code " input type="search" name="fault" value=(filter.fault) placeholder="contains"; }
                button type="submit" { "Filter" }
            }
            table #jobs {
                thead { tr { th.n { "Job" } th { "Topic" } th { "State" } th.n { "Attempt" } th { "Enqueued" }
                             th { "Last fault" } th { "Outcome" } } }
                // Refreshed in place as outcomes arrive (and every 10 s, for
                // enqueues and other processes' outcomes).
                tbody hx-get={ "/ui/jobs/rows?" (filter.query(&filter.before)) }
                    hx-trigger="sse:outcomes, every 10s" hx-swap="innerHTML" { (job_rows(jobs)) }
            }
            p.pages {
                @if !filter.before.is_empty() {
                    a href={ "/ui/jobs?" (filter.query("")) } { "Newest" } " "
                }
                @if let Some(last) = jobs.last().filter(|_| jobs.len() == JOBS_PER_PAGE) {
                    a #older href={ "/ui/jobs?" (filter.query(&last.id.to_string())) } { "Older" }
                }
            }
        },
    )
}

/// The job list's rows (also served alone for the refresh).
pub(super) fn job_rows(jobs: &[JobRecord]) -> Markup {
    html! {
        @for job in jobs {
            tr {
                td.n { a href={ "/ui/jobs/" (job.id) } { (job.id) } }
                td { (job.topic) }
                td class={ "state " (state_name(job)) } { (state_name(job)) }
                td.n { (job.attempt) }
                td { (when(job.enqueued_at)) }
                // A fault a later attempt got past is history, not an alarm.
                td class=(if recovered(job) { "code recovered" } else { "code" }) {
                    @if let Some(fault) = &job.last_fault { (fault.code) }
                }
                td { @if let Some(outcome) = &job.outcome { span class={ "state " (outcome.outcome.kind()) } { (outcome.outcome.kind()) } } }
            }
        }
    }
}

/// Whether the job ended with an answer after failed attempts.
fn recovered(job: &JobRecord) -> bool {
    use husk::outcome::Outcome;
    job.outcome.as_ref().is_some_and(|o| !matches!(o.outcome, Outcome::Failed { .. } | Outcome::Cancelled))
}

fn state_name(job: &JobRecord) -> &'static str {
    JobStatus::of(job).as_str()
}

/// Bytes as text (lossy), pretty JSON when they are JSON, cut at
/// [`SHOWN_BYTES`].
fn shown(bytes: &[u8]) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    };
    if text.len() <= SHOWN_BYTES {
        return text;
    }
    let mut end = SHOWN_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} bytes in all)", &text[..end], text.len())
}

/// One job's page: its state, input (while kept), attempts, outcome, and the buttons its state
/// and the session allow.
pub(super) fn job(session: &Session, job: &JobRecord, input: Option<&[u8]>) -> Markup {
    use husk::outcome::Outcome;
    use husk::store::JobState;
    // A failed job is an incident until retried or discarded (the store
    // refuses either once it is not open any more).
    let incident = !job.discarded && job.outcome.as_ref().is_some_and(|o| matches!(o.outcome, Outcome::Failed { .. }));
    let cancellable = matches!(job.state, JobState::Queued | JobState::Gated | JobState::Running);
    layout(
        &format!("Job {}", job.id),
        Some(session),
        html! {
            dl.job {
                dt { "Topic" } dd { (job.topic) }
                dt { "State" } dd #state class={ "state " (state_name(job)) } { (state_name(job)) }
                dt { "Attempt" } dd { (job.attempt) }
                dt { "Enqueued" } dd { (when(job.enqueued_at)) }
                @if let Some(gate) = job.not_before { dt { "Not before" } dd { (when(gate)) } }
                @if job.cancel_requested { dt { "Cancel" } dd { "asked" } }
            }
            @if !session.principal.read_only && (incident || cancellable) {
                div.actions {
                    @if cancellable {
                        (action(session, job, "cancel", "Cancel", Some(&format!("Cancel job {}?", job.id))))
                    }
                    @if incident {
                        (action(session, job, "retry", "Retry", None))
                        (action(session, job, "discard", "Discard",
                            Some(&format!("Discard incident {}? It ends for good, never retried.", job.id))))
                    }
                }
            }
            h2 { "Input" }
            @match input {
                Some(input) => pre #input { (shown(input)) },
                None => p.note { "Not kept: this topic's inputs are dropped when its jobs end ([retention] drop_inputs)." },
            }
            h2 { "Attempts" }
            ul.attempts {
                @for attempt in &job.attempts {
                    li {
                        span.attempt { "Attempt " (attempt.attempt) }
                        @if let Some(start) = attempt.started_at {
                            " started " span.started { (humantime::format_rfc3339_millis(start)) }
                        }
                        " ended " (when(attempt.finished_at))
                        @if let Some(micros) = attempt.duration_us { ", ran " span.duration { (ran_for(micros)) } }
                        @if let Some(fuel) = attempt.fuel { ", fuel " span.fuel { (fuel) } }
                        @if let Some(version) = &attempt.plugin_version {
                            " on version " span.digest title=(version) { (short(version)) }
                        }
                        @if let Some(fault) = &attempt.fault {
                            div.fault {
                                @if fault.code == husk::fault::codes::LOCK_EXPIRED {
                                    span.kill { "its worker's lock expired" } " "
                                } @else if let Some(kill) = fault.code.strip_prefix("husk.") {
                                    span.kill { "killed: " (kill) } " "
                                }
                                span.code { (fault.code) } pre { (shown(&fault.body)) }
                            }
                        }
                    }
                }
            }
            @if let Some(ended) = &job.outcome {
                h2 { "Outcome" }
                p #outcome-kind class={ "state " (ended.outcome.kind()) } { (ended.outcome.kind()) " at " (when(ended.finished_at)) " after " (ended.attempts) " attempt(s)"
                    @if job.discarded { "; its incident discarded: it ends so, never retried" } }
                @match &ended.outcome {
                    Outcome::Completed { output } => pre.output { (shown(output)) },
                    Outcome::BusinessError { code, message } => p { span.code { (code) } " " (message) },
                    Outcome::BusinessStatus { value } => p { span.code { (value) } },
                    Outcome::Failed { last_fault, diagnostic, .. } => div.fault {
                        span.code { (last_fault.code) } p { (diagnostic) } pre { (shown(&last_fault.body)) }
                    },
                    Outcome::Cancelled => p { "Cancelled by its owner." },
                }
            }
        },
    )
}

/// A button posting `name` for `job`, with the session's CSRF token; with
/// `confirm`, the browser asks that first (`assets/husk.js`).
fn action(session: &Session, job: &JobRecord, name: &str, label: &str, confirm: Option<&str>) -> Markup {
    html! {
        form method="post" action={ "/ui/jobs/" (job.id) "/" (name) } {
            input type="hidden" name="csrf" value=(session.csrf);
            button type="submit" name="action" value=(name) data-confirm=[confirm] { (label) }
        }
    }
}

/// One window's counts as table cells (classes name the window).
fn counts(counts: &Counts, window: &str) -> Markup {
    html! {
        td class={ "n completed-" (window) } { (counts.completed) }
        td class={ "n business-" (window) } { (counts.business) }
        td class={ "n failed-" (window) } { (counts.failed) }
        td class={ "n cancelled-" (window) } { (counts.cancelled) }
    }
}

/// How long ago a minute of the chart was, in words.
fn ago(minutes: usize) -> String {
    match minutes {
        0 => "this minute".to_owned(),
        1 => "1 minute ago".to_owned(),
        n => format!("{n} minutes ago"),
    }
}

/// A bar per minute of the last hour: completed (blue), failed (red, on
/// top), scaled to the busiest minute, with its axes (the busiest minute's
/// count, the hour's span) and each minute's counts on hover (an SVG
/// `title`). SVG with presentation attributes only (the CSP allows no
/// inline style).
fn chart(summary: &Summary) -> Markup {
    // The plot's box, and the margins for the axes' labels.
    const LEFT: u64 = 28;
    const WIDTH: u64 = 240;
    const HEIGHT: u64 = 40;
    const TOP: u64 = 6;
    const BOTTOM: u64 = TOP + HEIGHT;
    let bar = WIDTH / MINUTES as u64;
    let top = summary.per_minute.iter().map(|m| m.completed + m.failed).max().unwrap_or(0).max(1);
    let scale = |n: u64| n * HEIGHT / top;
    let minutes = summary.per_minute.len();
    html! {
        svg.chart width=(LEFT + WIDTH + 4) height=(BOTTOM + 14) viewBox={ "0 0 " (LEFT + WIDTH + 4) " " (BOTTOM + 14) }
            role="img"
            aria-label={ (summary.last_hour.completed) " completed and " (summary.last_hour.failed) " failed in the last hour" } {
            rect x=(LEFT) y=(TOP) width=(WIDTH) height=(HEIGHT) fill="#ffffff" {}
            line x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(BOTTOM) stroke="#687084" {}
            line x1=(LEFT) y1=(BOTTOM) x2=(LEFT + WIDTH) y2=(BOTTOM) stroke="#687084" {}
            text.axis x=(LEFT - 3) y=(TOP + 8) text-anchor="end" font-size="9" fill="#687084" { (top) }
            text.axis x=(LEFT - 3) y=(BOTTOM) text-anchor="end" font-size="9" fill="#687084" { "0" }
            text.axis x=(LEFT) y=(BOTTOM + 11) font-size="9" fill="#687084" { "−60 min" }
            text.axis x=(LEFT + WIDTH) y=(BOTTOM + 11) text-anchor="end" font-size="9" fill="#687084" { "now" }
            @for (i, minute) in summary.per_minute.iter().enumerate() {
                @let (done, failed) = (scale(minute.completed), scale(minute.failed));
                @let x = LEFT + i as u64 * bar;
                @if done > 0 {
                    rect x=(x) y=(BOTTOM - done - failed) width=(bar - 1) height=(done) fill="#2f5fd0" {}
                }
                @if failed > 0 {
                    rect x=(x) y=(BOTTOM - failed) width=(bar - 1) height=(failed) fill="#b3261e" {}
                }
                // The whole column answers the pointer with the minute's counts.
                rect.minute x=(x) y=(TOP) width=(bar) height=(HEIGHT) fill="#000000" fill-opacity="0" {
                    title {
                        (ago(minutes - 1 - i)) ": " (minute.completed) " completed, " (minute.failed) " failed"
                    }
                }
            }
        }
    }
}
