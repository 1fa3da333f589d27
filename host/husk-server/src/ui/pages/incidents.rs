//! The incidents page and its bulk confirmation.

use maud::{Markup, html};

use husk::store::JobRecord;

use super::{IncidentFilter, JOBS_PER_PAGE, Session, layout, topic_select, urlencode, when};

/// The last fault code of a job (an incident's), or "".
pub(in crate::ui) fn fault_code(job: &JobRecord) -> &str {
    match job.outcome.as_ref().map(|o| &o.outcome) {
        Some(husk::outcome::Outcome::Failed { last_fault, .. }) => &last_fault.code,
        _ => job.last_fault.as_ref().map_or("", |f| f.code.as_str()),
    }
}

/// The open incidents: grouped by topic and last fault code (each group a
/// link to its filter), then listed with a box each; retry or discard the
/// ticked ones, or all that match the filter.
pub(in crate::ui) fn incidents(
    session: &Session,
    topics: &[String],
    filter: &IncidentFilter,
    jobs: &[JobRecord],
) -> Markup {
    let mut groups: Vec<(&str, &str, usize)> = Vec::new();
    for job in jobs {
        let code = fault_code(job);
        match groups.iter_mut().find(|(t, c, _)| *t == job.topic && *c == code) {
            Some(group) => group.2 += 1,
            None => groups.push((&job.topic, code, 1)),
        }
    }
    groups.sort();
    let can = !session.principal.read_only;
    layout(
        "Incidents",
        Some(session),
        html! {
            form.filters method="get" action="/ui/incidents" {
                (topic_select(topics, &filter.topic))
                label { "Fault code contains " input type="text" name="code" value=(filter.code); }
                button type="submit" { "Filter" }
            }
            h2 { "By topic and last fault" }
            table #groups {
                thead { tr { th { "Topic" } th { "Last fault code" } th.n { "Open" } } }
                tbody {
                    @for (topic, code, count) in &groups {
                        tr {
                            td { (topic) }
                            td.code { a href={ "/ui/incidents?topic=" (urlencode(topic)) "&code=" (urlencode(code)) } { (code) } }
                            td.n { (count) }
                        }
                    }
                }
            }
            h2 { (jobs.len()) " open" }
            form #bulk method="post" action="/ui/incidents/bulk" {
                input type="hidden" name="csrf" value=(session.csrf);
                input type="hidden" name="topic" value=(filter.topic);
                input type="hidden" name="code" value=(filter.code);
                table #incidents {
                    thead { tr { @if can { th { "" } } th.n { "Job" } th { "Topic" } th { "Last fault" } th { "Ended" } } }
                    tbody {
                        @for job in jobs.iter().take(JOBS_PER_PAGE) {
                            tr {
                                @if can { td { input type="checkbox" name="id" value=(job.id); } }
                                td.n { a href={ "/ui/jobs/" (job.id) } { (job.id) } }
                                td { (job.topic) }
                                td.code { (fault_code(job)) }
                                td { @if let Some(ended) = &job.outcome { (when(ended.finished_at)) } }
                            }
                        }
                    }
                }
                @if jobs.len() > JOBS_PER_PAGE { p.note { "The newest " (JOBS_PER_PAGE) " shown; “all matching” takes every one." } }
                @if can && !jobs.is_empty() {
                    div.actions {
                        label { input type="radio" name="scope" value="selected" checked; " ticked" }
                        label { input type="radio" name="scope" value="all"; " all " (jobs.len()) " matching" }
                        button type="submit" name="action" value="retry" { "Retry…" }
                        button type="submit" name="action" value="discard" { "Discard…" }
                    }
                }
            }
        },
    )
}

/// The confirmation of a bulk retry or discard: how many, and the button
/// that does it.
pub(in crate::ui) fn confirm_bulk(
    session: &Session,
    action: &str,
    all: bool,
    filter: &IncidentFilter,
    ids: &[husk::store::JobId],
) -> Markup {
    layout(
        "Confirm",
        Some(session),
        html! {
            p #confirm-count { (action_title(action)) " " (ids.len()) " incident(s)?" }
            @if !ids.is_empty() {
                form method="post" action="/ui/incidents/bulk" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    input type="hidden" name="topic" value=(filter.topic);
                    input type="hidden" name="code" value=(filter.code);
                    input type="hidden" name="scope" value=(if all { "all" } else { "selected" });
                    @for id in ids { input type="hidden" name="id" value=(id); }
                    input type="hidden" name="confirm" value="yes";
                    button type="submit" name="action" value=(action) { "Yes, " (action) " " (ids.len()) }
                }
            }
            p { a href="/ui/incidents" { "Back" } }
        },
    )
}

fn action_title(action: &str) -> &'static str {
    if action == "retry" { "Retry" } else { "Discard" }
}

/// What a bulk retry or discard did.
pub(in crate::ui) fn bulk_done(session: &Session, action: &str, done: usize, skipped: usize) -> Markup {
    layout(
        "Done",
        Some(session),
        html! {
            p #bulk-done { (action_title(action)) ": " (done) " done" @if skipped > 0 { ", " (skipped) " no longer open" } "." }
            p { a href="/ui/incidents" { "Back to the incidents" } }
        },
    )
}
