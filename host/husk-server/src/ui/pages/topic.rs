//! A topic's page.

use maud::{Markup, html};

use husk::versions::VersionInfo;

use super::{Session, layout, short, urlencode, when};

/// A topic's page: pause or resume, its kept versions (roll back to any),
/// a component to upload; `refused` says why an upload was refused.
pub(in crate::ui) fn topic(
    session: &Session,
    topic: &str,
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
            h2 { "Versions" }
            table #versions {
                thead { tr { th { "Version" } th { "Origin" } th { "Deployed" } th { "By" } th { "" } } }
                tbody {
                    @for version in versions {
                        tr data-version=(version.version) {
                            td.digest title=(version.version) { (short(&version.version)) }
                            td { (serde_json::to_value(version.origin).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()) }
                            td { (when(version.deployed_at)) }
                            td { (version.deployed_by.as_deref().unwrap_or("—")) }
                            td {
                                @if version.current { strong { "current" } }
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
