//! A topic's page: its versions (roll back to any), a component to upload,
//! pause and resume.

use std::sync::Arc;

use axum::extract::{Form, Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;

use husk::host::PluginSource;
use husk::versions::Origin;

use super::{Csrf, Page, Refusal, Ui, blocking, by, changing, may_change, pages, refusal, signed_in, store_failed};

/// A topic's page: its versions (roll back to any), a component to upload,
/// pause or resume.
pub(super) async fn topic(State(ui): State<Arc<Ui>>, headers: HeaderMap, Path(topic): Path<String>) -> Page {
    let session = signed_in(&ui, &headers)?;
    ui.topic_of(&session, &topic)?;
    let (versions, paused) = blocking({
        let (ui, topic) = (ui.clone(), topic.clone());
        move || {
            let host = ui.api.host();
            let versions = host.versions(&topic).map_err(|e| refusal(StatusCode::CONFLICT, &e.to_string()))?;
            Ok((versions, host.paused().map_err(store_failed)?.contains(&topic)))
        }
    })
    .await?;
    let about = about(&ui, &topic);
    Ok(pages::topic(&session, &topic, &about, &versions, paused, None).into_response())
}

/// What a topic's page says of its configuration and its last hour.
fn about(ui: &Ui, name: &str) -> pages::topic::About {
    let host = ui.api.host();
    let settings = host.topics().find(|t| t.name() == name).map(|topic| {
        let (limits, pool) = (topic.limits(), topic.pool_config());
        let hosts = topic.grants().http.as_ref().map(|http| http.allowed.iter().map(|h| h.to_string()).collect());
        pages::topic::Settings {
            workers: pool.workers,
            fetch_batch: pool.fetch_batch,
            lock_duration: pool.lock_duration,
            deadline: limits.deadline,
            memory: limits.memory,
            fuel: limits.fuel,
            retry: host.retry_of(topic),
            permanent: topic.permanent_faults().to_string(),
            schedule: topic.schedule().map(|s| {
                let catch_up = humantime::format_duration(s.catch_up());
                format!("{} ({}; missed ticks caught up for {catch_up})", s.line(), s.zone())
            }),
            drops_inputs: topic.drops_inputs(),
            mapper: topic.has_mapper(),
            allowed_hosts: hosts.unwrap_or_default(),
        }
    });
    pages::topic::About { settings, recent: ui.api.metrics().recent().summary(name, std::time::SystemTime::now()) }
}

pub(super) async fn pause(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path(topic): Path<String>,
    Form(form): Form<Csrf>,
) -> Page {
    set_paused(ui, headers, topic, form, true).await
}

pub(super) async fn resume(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path(topic): Path<String>,
    Form(form): Form<Csrf>,
) -> Page {
    set_paused(ui, headers, topic, form, false).await
}

async fn set_paused(ui: Arc<Ui>, headers: HeaderMap, topic: String, form: Csrf, paused: bool) -> Page {
    let session = changing(&ui, &headers, &form.csrf)?;
    ui.topic_of(&session, &topic)?;
    let back = format!("/ui/topics/{}", pages::urlencode(&topic));
    blocking(move || {
        ui.api.host().set_paused(&topic, paused).map_err(|e| refusal(StatusCode::CONFLICT, &e.to_string()))
    })
    .await?;
    Ok(Redirect::to(&back).into_response())
}

/// The rollback form: the CSRF token and the version to make current.
#[derive(Deserialize)]
pub(super) struct Rollback {
    csrf: String,
    version: String,
}

pub(super) async fn rollback(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path(topic): Path<String>,
    Form(form): Form<Rollback>,
) -> Page {
    let session = changing(&ui, &headers, &form.csrf)?;
    ui.topic_of(&session, &topic)?;
    let back = format!("/ui/topics/{}", pages::urlencode(&topic));
    blocking(move || {
        let host = ui.api.host();
        host.rollback_by(&topic, Some(&form.version), Some(&by(&session)))
            .map_err(|e| refusal(StatusCode::CONFLICT, &e.to_string()))
    })
    .await?;
    Ok(Redirect::to(&back).into_response())
}

/// The upload form (multipart): the CSRF token, then the component. A
/// component the API would refuse is refused here with the same reason,
/// shown on the topic's page.
pub(super) async fn deploy(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    Path(topic): Path<String>,
    mut form: Multipart,
) -> Page {
    // Who asks, before the component is read: no one signed out, or only
    // allowed to look, gets to send megabytes. (Its CSRF token is in the
    // form, checked once read.)
    let asking = may_change(&ui, &headers)?;
    ui.topic_of(&asking, &topic)?;
    let bad = |e: &dyn std::fmt::Display| refusal(StatusCode::BAD_REQUEST, &format!("cannot read the form: {e}"));
    let (mut csrf, mut component) = (None, None);
    while let Some(field) = form.next_field().await.map_err(|e| bad(&e))? {
        match field.name() {
            Some("csrf") => csrf = Some(field.text().await.map_err(|e| bad(&e))?),
            Some("component") => component = Some(field.bytes().await.map_err(|e| bad(&e))?.to_vec()),
            _ => {}
        }
    }
    let session = changing(&ui, &headers, csrf.as_deref().unwrap_or_default())?;
    ui.topic_of(&session, &topic)?;
    let Some(bytes) = component.filter(|c| !c.is_empty()) else {
        return Err(refusal(StatusCode::BAD_REQUEST, "choose a component (.wasm) to upload"));
    };
    if bytes.len() > ui.api.limits().plugin {
        return Err(refusal(StatusCode::PAYLOAD_TOO_LARGE, "the component is over the plugin size limit"));
    }
    let outcome = blocking({
        let (ui, topic) = (ui.clone(), topic.clone());
        move || {
            let source = PluginSource::Bytes { bytes, name: format!("the component uploaded to `{topic}`") };
            let host = ui.api.host();
            let deployed =
                host.deploy_by(&topic, &source, Origin::Deploy, Some(&by(&session))).map_err(|e| e.to_string());
            let versions = host.versions(&topic).map_err(|e| refusal(StatusCode::CONFLICT, &e.to_string()))?;
            Ok((deployed, versions, host.paused().map_err(store_failed)?.contains(&topic), session))
        }
    })
    .await?;
    match outcome {
        (Ok(_), ..) => Ok(Redirect::to(&format!("/ui/topics/{}", pages::urlencode(&topic))).into_response()),
        (Err(reason), versions, paused, session) => Err(Refusal::Page(
            StatusCode::UNPROCESSABLE_ENTITY,
            pages::topic(&session, &topic, &about(&ui, &topic), &versions, paused, Some(&reason)),
        )),
    }
}
