//! Plugin versions: deploy (the component's bytes as the body), list, roll
//! back; the tenant's topics with their current version; pausing and
//! resuming a topic.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::model::{Paused, Topic, TopicList, Version, VersionList};
use super::{Api, ApiError, Caller, ErrorKind, blocking, read_body};
use husk::host::PluginSource;
use husk::versions::Origin;

/// Deploys a plugin version: compiles and validates the component in the
/// body off the dispatch path, then makes it the topic's current version.
/// Refused (422) when it fails validation; the current version stays.
#[utoipa::path(
    post, path = "/topics/{topic}/plugins", tag = "plugins",
    params(("topic" = String, Path, description = "The topic.")),
    request_body(
        content((Component = "application/wasm"), (Component = "application/octet-stream")),
        description = "The component's bytes.",
    ),
    responses(
        (status = 201, description = "The new current version.", body = Version),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 409, description = "`not-a-plugin-topic` or `store-conflict`.", body = ApiError),
        (status = 413, body = ApiError), (status = 422, description = "`invalid-plugin`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn deploy(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
    body: Body,
) -> Result<(StatusCode, Json<Version>), ApiError> {
    // The body first, even for a refusal (see `read_body`).
    let bytes = read_body(body, api.limits.plugin).await?;
    api.own_topic(&caller.tenant, &topic)?;
    if bytes.is_empty() {
        return Err(ApiError::new(ErrorKind::InvalidPlugin, "the body is empty: send the component's bytes"));
    }
    let source = PluginSource::Bytes { bytes, name: format!("the component deployed to `{topic}`") };
    let by = caller.tenant;
    let info = blocking(move || Ok(api.host.deploy_by(&topic, &source, Origin::Deploy, Some(&by))?)).await?;
    Ok((StatusCode::CREATED, Json(info.into())))
}

/// A topic's kept plugin versions, newest first.
#[utoipa::path(
    get, path = "/topics/{topic}/plugins", tag = "plugins",
    params(("topic" = String, Path, description = "The topic.")),
    responses(
        (status = 200, body = VersionList),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn versions(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
) -> Result<Json<VersionList>, ApiError> {
    api.own_topic(&caller.tenant, &topic)?;
    let (versions, topic) = blocking(move || Ok((api.host.versions(&topic)?, topic))).await?;
    Ok(Json(VersionList { topic, versions: versions.into_iter().map(Version::from).collect() }))
}

/// A deployed component's body in the document: bytes, at least one.
pub(super) struct Component;

impl utoipa::PartialSchema for Component {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .min_length(Some(1))
            .into()
    }
}

impl ToSchema for Component {}

/// Body of a rollback (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RollbackBody {
    /// The version to go back to (a digest or a prefix); default: the one
    /// current before the current one.
    version: Option<String>,
}

/// Rolls back: makes the previous version (or the one named in the body)
/// current again. (Off the async threads: it may read the store and compile
/// a version this process never loaded.)
#[utoipa::path(
    post, path = "/topics/{topic}/rollback", tag = "plugins",
    params(("topic" = String, Path, description = "The topic.")),
    request_body(content = Option<RollbackBody>, content_type = "application/json", description = "Optional: the version to go back to."),
    responses(
        (status = 200, description = "The new current version.", body = Version),
        (status = 400, description = "`malformed-json` or `invalid-body`.", body = ApiError),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 409, description = "`no-rollback` or `store-conflict`.", body = ApiError),
        (status = 413, body = ApiError), (status = 422, description = "`invalid-plugin`: the version no longer compiles.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn rollback(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
    body: Body,
) -> Result<Json<Version>, ApiError> {
    let body = read_body(body, 4 << 10).await?;
    api.own_topic(&caller.tenant, &topic)?;
    let body: RollbackBody = if body.iter().all(u8::is_ascii_whitespace) {
        RollbackBody::default()
    } else {
        let body: Option<RollbackBody> =
            serde_json::from_slice(&body).map_err(|e| ApiError::body(&e, "a rollback: {\"version\": …}"))?;
        body.unwrap_or_default()
    };
    let by = caller.tenant;
    let info = blocking(move || Ok(api.host.rollback_by(&topic, body.version.as_deref(), Some(&by))?)).await?;
    Ok(Json(info.into()))
}

/// The tenant's topics, each with its current version, live job counts
/// (from the last published snapshot) and whether it is paused (from the
/// store).
#[utoipa::path(
    get, path = "/topics", tag = "topics",
    responses(
        (status = 200, body = TopicList, links(
            ("Enqueue" = (operation_id = "enqueue", parameters(("topic" = "$response.body#/topics/0/topic")))),
            ("Versions" = (operation_id = "versions", parameters(("topic" = "$response.body#/topics/0/topic")))),
            ("Rollback" = (operation_id = "rollback", parameters(("topic" = "$response.body#/topics/0/topic")))),
            ("Pause" = (operation_id = "pause", parameters(("topic" = "$response.body#/topics/0/topic")))),
            ("Resume" = (operation_id = "resume", parameters(("topic" = "$response.body#/topics/0/topic")))),
        )),
        (status = 401, body = ApiError), (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn topics(State(api): State<Arc<Api>>, caller: Caller) -> Result<Json<TopicList>, ApiError> {
    let host = api.host.clone();
    let paused = blocking(move || Ok(host.paused()?)).await?;
    let snapshot = api.host.snapshot();
    let topics = api
        .topics_of(&caller.tenant)
        .into_iter()
        .map(|topic| {
            let version = api.host.current_version(&topic).map(|v| v.version);
            let depth = snapshot.depths.get(&topic).copied().unwrap_or_default().into();
            let open_incidents = snapshot.incidents.get(&topic).copied().unwrap_or_default();
            let paused = paused.contains(&topic);
            Topic { topic, version, depth, open_incidents, paused }
        })
        .collect();
    Ok(Json(TopicList { topics }))
}

/// Pauses a topic: stops fetching its jobs on every process sharing the
/// store; enqueues still land, running jobs finish. `changed` is false when
/// it was paused already.
#[utoipa::path(
    post, path = "/topics/{topic}/pause", tag = "topics",
    params(("topic" = String, Path, description = "The topic.")),
    responses(
        (status = 200, body = Paused),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 409, description = "`store-conflict`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn pause(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
) -> Result<Json<Paused>, ApiError> {
    set_paused(api, caller, topic, true).await
}

/// Resumes a paused topic: its jobs are fetched again.
#[utoipa::path(
    post, path = "/topics/{topic}/resume", tag = "topics",
    params(("topic" = String, Path, description = "The topic.")),
    responses(
        (status = 200, body = Paused),
        (status = 401, body = ApiError), (status = 404, description = "`unknown-topic`.", body = ApiError),
        (status = 409, description = "`store-conflict`.", body = ApiError),
        (status = 500, body = ApiError), (status = 503, body = ApiError),
    ),
)]
pub(super) async fn resume(
    State(api): State<Arc<Api>>,
    caller: Caller,
    Path(topic): Path<String>,
) -> Result<Json<Paused>, ApiError> {
    set_paused(api, caller, topic, false).await
}

async fn set_paused(api: Arc<Api>, caller: Caller, topic: String, paused: bool) -> Result<Json<Paused>, ApiError> {
    api.own_topic(&caller.tenant, &topic)?;
    let (changed, topic) = blocking(move || Ok((api.host.set_paused(&topic, paused)?, topic))).await?;
    Ok(Json(Paused { topic, paused, changed }))
}
