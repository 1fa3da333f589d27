//! Plugin versions: deploy (the component's bytes as the body), list, roll
//! back; the tenant's topics with their current version; pausing and
//! resuming a topic.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Api, ApiError, Caller, blocking, read_body};
use husk::host::PluginSource;
use husk::versions::{Origin, VersionInfo};

/// `POST /v1/topics/{topic}/plugins`: compiles and validates the component
/// in the body off the dispatch path, then makes it the topic's current
/// version. Refused (422) when it fails validation; the current version
/// stays.
pub(super) async fn deploy(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
    body: Body,
) -> Result<(StatusCode, Json<VersionInfo>), ApiError> {
    // The body first, even for a refusal (see `read_body`).
    let bytes = read_body(body, api.limits.plugin).await?;
    api.own_topic(&caller.tenant, &topic)?;
    let source = PluginSource::Bytes { bytes, name: format!("the component deployed to `{topic}`") };
    let by = caller.tenant;
    let info = blocking(move || Ok(api.host.deploy_by(&topic, &source, Origin::Deploy, Some(&by))?)).await?;
    Ok((StatusCode::CREATED, Json(info)))
}

/// `GET /v1/topics/{topic}/plugins`: the kept versions, newest first.
pub(super) async fn versions(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
) -> Result<Json<Value>, ApiError> {
    api.own_topic(&caller.tenant, &topic)?;
    let (versions, topic) = blocking(move || Ok((api.host.versions(&topic)?, topic))).await?;
    Ok(Json(json!({ "topic": topic, "versions": versions })))
}

/// Body of a rollback (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RollbackBody {
    /// The version to go back to (a digest or a prefix); default: the one
    /// current before the current one.
    version: Option<String>,
}

/// `POST /v1/topics/{topic}/rollback`: makes the previous version (or the
/// one named in the body) current again. (Off the async threads: it may
/// read the store and compile a version this process never loaded.)
pub(super) async fn rollback(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
    body: Body,
) -> Result<Json<VersionInfo>, ApiError> {
    let body = read_body(body, 4 << 10).await?;
    api.own_topic(&caller.tenant, &topic)?;
    let body: RollbackBody = if body.iter().all(u8::is_ascii_whitespace) {
        RollbackBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::malformed_json(&e))?
    };
    let by = caller.tenant;
    let info = blocking(move || Ok(api.host.rollback_by(&topic, body.version.as_deref(), Some(&by))?)).await?;
    Ok(Json(info))
}

/// `GET /v1/topics`: the tenant's topics, each with its current version,
/// live job counts (from the last published snapshot) and whether it is
/// paused (from the store).
pub(super) async fn topics(State(api): State<Arc<Api>>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let host = api.host.clone();
    let paused = blocking(move || Ok(host.paused()?)).await?;
    let snapshot = api.host.snapshot();
    let topics: Vec<Value> = api
        .topics_of(&caller.tenant)
        .into_iter()
        .map(|topic| {
            let current = api.host.current_version(&topic);
            let depth = snapshot.depths.get(&topic).copied().unwrap_or_default();
            let paused = paused.contains(&topic);
            json!({ "topic": topic, "version": current.map(|v| v.version), "depth": depth, "paused": paused })
        })
        .collect();
    Ok(Json(json!({ "topics": topics })))
}

/// `POST /v1/topics/{topic}/pause`: stops fetching the topic's jobs on
/// every process sharing the store; enqueues still land, running jobs
/// finish. `changed` is false when it was paused already.
pub(super) async fn pause(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
) -> Result<Json<Value>, ApiError> {
    set_paused(api, caller, topic, true).await
}

/// `POST /v1/topics/{topic}/resume`: fetches the topic's jobs again.
pub(super) async fn resume(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
) -> Result<Json<Value>, ApiError> {
    set_paused(api, caller, topic, false).await
}

async fn set_paused(api: Arc<Api>, caller: Caller, topic: String, paused: bool) -> Result<Json<Value>, ApiError> {
    api.own_topic(&caller.tenant, &topic)?;
    let (changed, topic) = blocking(move || Ok((api.host.set_paused(&topic, paused)?, topic))).await?;
    Ok(Json(json!({ "topic": topic, "paused": paused, "changed": changed })))
}
