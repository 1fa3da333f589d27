//! A topic's page.

use std::time::Duration;

use maud::{Markup, html};

use husk::retry::RetryPolicySpec;
use husk::versions::VersionInfo;

use super::{Session, counts, layout, short, urlencode, when};
use crate::recent::Summary;

/// What the page says of a topic besides its versions.
pub(in crate::ui) struct About {
    /// Its configuration; `None` for a topic this process does not run.
    pub(in crate::ui) settings: Option<Settings>,
    /// Its last hour in this process.
    pub(in crate::ui) recent: Summary,
}

/// A topic's configuration, as this process runs it.
pub(in crate::ui) struct Settings {
    pub(in crate::ui) workers: usize,
    pub(in crate::ui) fetch_batch: usize,
    pub(in crate::ui) lock_duration: Duration,
    pub(in crate::ui) deadline: Duration,
    pub(in crate::ui) memory: u64,
    pub(in crate::ui) fuel: Option<u64>,
    pub(in crate::ui) retry: RetryPolicySpec,
    pub(in crate::ui) permanent: String,
    pub(in crate::ui) schedule: Option<String>,
    pub(in crate::ui) drops_inputs: bool,
    pub(in crate::ui) mapper: bool,
    pub(in crate::ui) allowed_hosts: Vec<String>,
}

/// A retry policy in words.
fn retry_text(retry: RetryPolicySpec) -> String {
    let text = |d: Duration| humantime::format_duration(d).to_string();
    match retry {
        RetryPolicySpec::None => "none: one attempt".to_owned(),
        RetryPolicySpec::Fixed { max_attempts, delay } => format!("{max_attempts} attempts, {} apart", text(delay)),
        RetryPolicySpec::Exponential { max_attempts, base, max, jitter } => format!(
            "{max_attempts} attempts, backoff from {} doubling up to {}{}",
            text(base),
            text(max),
            if jitter { ", with jitter" } else { "" }
        ),
    }
}

fn settings(settings: &Settings) -> Markup {
    let duration = |d: Duration| humantime::format_duration(d).to_string();
    html! {
        dl.job #settings {
            dt { "Workers" } dd.workers { (settings.workers) }
            dt { "Fetch batch" } dd { (settings.fetch_batch) }
            dt { "Deadline" } dd.deadline { (duration(settings.deadline)) }
            dt { "Memory" } dd { (bytesize::ByteSize(settings.memory)) }
            dt { "Fuel" } dd { @match settings.fuel { Some(fuel) => (fuel), None => "unmetered" } }
            dt { "Retry" } dd.retry { (retry_text(settings.retry)) }
            dt { "Never retried" } dd.permanent { (settings.permanent) }
            dt { "Periodic jobs" } dd.schedule {
                @match &settings.schedule { Some(schedule) => code { (schedule) }, None => "none" }
            }
            dt { "Inputs" } dd {
                @if settings.drops_inputs { "dropped when a job ends" } @else { "kept with the outcome" }
            }
            dt { "Lock" } dd { (duration(settings.lock_duration)) " (how long a claimed job stays its worker's)" }
            dt { "Error mapper" } dd { @if settings.mapper { "yes" } @else { "none: every fault is technical" } }
            dt { "Outbound HTTP" } dd.hosts {
                @if settings.allowed_hosts.is_empty() { "none" }
                @else { @for (i, host) in settings.allowed_hosts.iter().enumerate() {
                    @if i > 0 { ", " } code { (host) }
                } }
            }
        }
    }
}

/// A topic's page: its configuration and last hour, pause or resume, its
/// kept versions (roll back to any), a component to upload; `refused` says
/// why an upload was refused.
pub(in crate::ui) fn topic(
    session: &Session,
    topic: &str,
    about: &About,
    versions: &[VersionInfo],
    paused: bool,
    refused: Option<&str>,
) -> Markup {
    let base = format!("/ui/topics/{}", urlencode(topic));
    let can = !session.principal.read_only;
    layout(
        &format!("Topic {topic}"),
        Some(session),
        html! {
            p { a href={ "/ui/jobs?topic=" (urlencode(topic)) } { "Its jobs" } }
            p #topic-state { "Fetching: " @if paused { "paused" } @else { "running" } }
            @if can {
                div.actions {
                    @let (action, label) = if paused { ("resume", "Resume") } else { ("pause", "Pause") };
                    form method="post" action={ (base) "/" (action) } {
                        input type="hidden" name="csrf" value=(session.csrf);
                        button type="submit" name="action" value=(action) { (label) }
                    }
                }
            }
            h2 { "Configuration" }
            @match &about.settings {
                Some(s) => (settings(s)),
                None => p.note { "Not run by this process." },
            }
            h2 { "The last hour (outcomes this process delivered)" }
            table #topic-recent {
                thead { tr { th { "" } th.n { "Completed" } th.n { "Business" } th.n { "Failed" } th.n { "Cancelled" } } }
                tbody {
                    tr { td { "minute" } (counts(&about.recent.last_minute, "minute")) }
                    tr { td { "hour" } (counts(&about.recent.last_hour, "hour")) }
                }
            }
            h2 { "Versions" }
            table #versions {
                caption { "Newest deploy first. A rollback makes an earlier version current; the order stays." }
                thead { tr { th { "Version" } th { "Origin" } th { "Deployed" } th { "By" } th { "" } } }
                tbody {
                    @for version in versions {
                        tr data-version=(version.version) {
                            td.digest title=(version.version) { (short(&version.version)) }
                            td { (serde_json::to_value(version.origin).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()) }
                            td { (when(version.deployed_at)) }
                            td { (version.deployed_by.as_deref().unwrap_or("—")) }
                            td {
                                @if version.current {
                                    strong { "current" }
                                    @if let Some(rollback) = &version.rolled_back {
                                        " (rolled back " (when(rollback.at))
                                        @if let Some(by) = &rollback.by { " by " (by) }
                                        ")"
                                    }
                                }
                                @else if can {
                                    form method="post" action={ (base) "/rollback" } {
                                        input type="hidden" name="csrf" value=(session.csrf);
                                        input type="hidden" name="version" value=(version.version);
                                        button type="submit" name="action" value="rollback" { "Make current" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if can {
                h2 { "Deploy a new version" }
                @if let Some(reason) = refused { p.error #refused { "Refused: " (reason) } }
                form method="post" action={ (base) "/deploy" } enctype="multipart/form-data" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    input #component type="file" name="component" accept=".wasm" required;
                    button type="submit" name="action" value="deploy" { "Deploy" }
                }
            }
        },
    )
}
